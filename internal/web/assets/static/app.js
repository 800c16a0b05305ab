// Keyboard: "/" focuses the search box; j/k move through results (search
// results, backlinks, activity); Enter opens the selected one; "g s" and
// "g a" go to the status and activity pages.
(function () {
  "use strict";
  var sel = -1, pendingG = false;
  function items() {
    return Array.prototype.slice.call(document.querySelectorAll("#results > li.result, #backlinks > li.result"));
  }
  function select(i) {
    var list = items();
    if (!list.length) return;
    sel = Math.max(0, Math.min(list.length - 1, i));
    list.forEach(function (el, j) { el.classList.toggle("sel", j === sel); });
    list[sel].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target, typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (e.key === "Escape" && typing) { t.blur(); return; }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (pendingG) {
      pendingG = false;
      if (e.key === "s") { location.href = "/ui/status"; return; }
      if (e.key === "a") { location.href = "/ui/activity"; return; }
    }
    switch (e.key) {
      case "/": e.preventDefault(); var q = document.getElementById("q"); if (q) { q.focus(); q.select(); } break;
      case "j": select(sel + 1); break;
      case "k": select(sel - 1); break;
      case "g": pendingG = true; break;
      case "Enter":
        var list = items();
        if (sel >= 0 && list[sel]) { var a = list[sel].querySelector("a"); if (a) { e.preventDefault(); a.click(); } }
        break;
    }
  });
})();

// Pending page: poll the list of waiting confirmations and reload when it
// changed (a new request, a decision elsewhere, an expiry).
(function () {
  "use strict";
  var list = document.getElementById("pending");
  if (!list || !window.fetch) return;
  var shown = list.getAttribute("data-ids") || "";
  setInterval(function () {
    fetch("/ui/pending.json", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) { if (d && d.ids && d.ids.join(" ") !== shown) location.reload(); })
      .catch(function () {});
  }, 3000);
})();
