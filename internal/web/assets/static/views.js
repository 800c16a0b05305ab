// Views: the link graph (whole vault on /ui/graph, and a small local graph
// beside each note), drawn as SVG from /ui/graph.json with a small force
// layout written here (no library); and the live parts of the pages, fed by
// the server's event stream (/ui/events): the status page's progress bars
// and watcher lag, the activity list, the Pending badge. No inline script,
// no network beyond this server.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function noteURL(p) { return "/ui/note?path=" + encodeURIComponent(p); }

  // layout places the nodes with a force simulation: springs along the
  // edges, repulsion between nodes (only within neighbouring grid cells, so
  // a 2000-note graph stays fast), a pull to the centre. Start positions
  // are a sunflower spiral by rank, so the same graph lays out the same.
  function layout(nodes, edges, budgetMs) {
    var n = nodes.length, i, k = 40, golden = Math.PI * (3 - Math.sqrt(5));
    for (i = 0; i < n; i++) {
      var r = k * Math.sqrt(i + 0.5), a = i * golden;
      nodes[i].x = r * Math.cos(a); nodes[i].y = r * Math.sin(a);
      nodes[i].vx = 0; nodes[i].vy = 0;
    }
    var start = Date.now(), iters = n > 1000 ? 150 : 300, cell = 3 * k;
    for (var it = 0; it < iters; it++) {
      var temp = 1 - it / iters, grid = {};
      for (i = 0; i < n; i++) {
        var key = Math.floor(nodes[i].x / cell) + "," + Math.floor(nodes[i].y / cell);
        (grid[key] = grid[key] || []).push(i);
      }
      for (i = 0; i < n; i++) {
        var p = nodes[i], cx = Math.floor(p.x / cell), cy = Math.floor(p.y / cell);
        for (var dx = -1; dx <= 1; dx++) for (var dy = -1; dy <= 1; dy++) {
          var list = grid[(cx + dx) + "," + (cy + dy)];
          if (!list) continue;
          for (var j = 0; j < list.length; j++) {
            if (list[j] <= i) continue;
            var q = nodes[list[j]], ddx = p.x - q.x, ddy = p.y - q.y, d2 = ddx * ddx + ddy * ddy + 0.01;
            if (d2 > cell * cell) continue;
            var f = (k * k) / d2;
            p.vx += ddx * f; p.vy += ddy * f; q.vx -= ddx * f; q.vy -= ddy * f;
          }
        }
        p.vx -= p.x * 0.01; p.vy -= p.y * 0.01;
      }
      for (var e = 0; e < edges.length; e++) {
        var s = edges[e].s, t = edges[e].t, ex = t.x - s.x, ey = t.y - s.y, d = Math.sqrt(ex * ex + ey * ey) + 0.01;
        var g = (d - k) / d * 0.05;
        s.vx += ex * g; s.vy += ey * g; t.vx -= ex * g; t.vy -= ey * g;
      }
      for (i = 0; i < n; i++) {
        var o = nodes[i], sp = Math.sqrt(o.vx * o.vx + o.vy * o.vy), cap = 10 * temp + 0.5;
        if (sp > cap) { o.vx *= cap / sp; o.vy *= cap / sp; }
        o.x += o.vx; o.y += o.vy; o.vx *= 0.5; o.vy *= 0.5;
      }
      if (Date.now() - start > budgetMs) break;
    }
  }

  // draw renders the graph data into box (an element with the JSON's
  // address in data-src) and says "showing N of M" in count.
  function draw(box, data, count, small) {
    var byPath = {}, nodes = data.nodes.map(function (d) { var o = { d: d }; byPath[d.path] = o; return o; });
    var edges = [];
    data.edges.forEach(function (e) {
      if (byPath[e.source] && byPath[e.target]) edges.push({ s: byPath[e.source], t: byPath[e.target] });
    });
    if (count) {
      count.textContent = "Showing " + nodes.length + " of " + data.total + " notes, " + edges.length + " links" +
        (data.truncated ? " (the most " + (data.center ? "nearby" : "linked") + " ones; raise the limit to see more)" : "") + ".";
    }
    layout(nodes, edges, small ? 300 : 2000);
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    nodes.forEach(function (o) { minX = Math.min(minX, o.x); minY = Math.min(minY, o.y); maxX = Math.max(maxX, o.x); maxY = Math.max(maxY, o.y); });
    if (!nodes.length) { minX = minY = -50; maxX = maxY = 50; }
    var pad = 40, vb = [minX - pad, minY - pad, maxX - minX + 2 * pad, maxY - minY + 2 * pad];
    var svg = el("svg", { viewBox: vb.join(" "), role: "img", "aria-label": "Link graph: " + nodes.length + " notes", "class": "graph-svg" });
    // Labels keep a readable size whatever the graph's extent.
    var edgeG = el("g", { "class": "edges" }, svg), nodeG = el("g", { "class": "nodes", "font-size": Math.max(10, vb[2] / 80).toFixed(1) }, svg);
    edges.forEach(function (e) { el("line", { x1: e.s.x, y1: e.s.y, x2: e.t.x, y2: e.t.y }, edgeG); });
    // Labels for the centre, the most linked, and every note of a small graph.
    var ranked = nodes.slice().sort(function (a, b) { return b.d.degree - a.d.degree; });
    var labelled = {};
    ranked.slice(0, nodes.length <= 40 ? nodes.length : 15).forEach(function (o) { labelled[o.d.path] = true; });
    nodes.forEach(function (o) {
      var a = el("a", { href: noteURL(o.d.path), "class": "node" + (o.d.path === data.center ? " center" : ""), "data-path": o.d.path }, nodeG);
      el("circle", { cx: o.x, cy: o.y, r: 3 + Math.min(12, Math.sqrt(o.d.degree) * 1.6) }, a);
      el("title", {}, a).textContent = o.d.title + " (" + o.d.path + ") · " + o.d.degree + " linked";
      if (labelled[o.d.path] || o.d.path === data.center) {
        el("text", { x: o.x + 6, y: o.y - 6 }, a).textContent = o.d.title;
      }
    });
    box.textContent = "";
    box.appendChild(svg);
    panZoom(svg, vb);
  }

  function panZoom(svg, vb) {
    var drag = null;
    function set() { svg.setAttribute("viewBox", vb.join(" ")); }
    svg.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect(), f = e.deltaY > 0 ? 1.15 : 1 / 1.15;
      var mx = vb[0] + (e.clientX - r.left) / r.width * vb[2], my = vb[1] + (e.clientY - r.top) / r.height * vb[3];
      vb = [mx - (mx - vb[0]) * f, my - (my - vb[1]) * f, vb[2] * f, vb[3] * f];
      set();
    }, { passive: false });
    svg.addEventListener("pointerdown", function (e) {
      if (e.target.closest && e.target.closest("a")) return;
      drag = { x: e.clientX, y: e.clientY, vb: vb.slice() };
      svg.setPointerCapture(e.pointerId);
    });
    svg.addEventListener("pointermove", function (e) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      vb[0] = drag.vb[0] - (e.clientX - drag.x) / r.width * vb[2];
      vb[1] = drag.vb[1] - (e.clientY - drag.y) / r.height * vb[3];
      set();
    });
    svg.addEventListener("pointerup", function () { drag = null; });
  }

  function loadGraph(box, count, small) {
    fetch(box.getAttribute("data-src"), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.json().then(function (d) { return { ok: r.ok, d: d }; }); })
      .then(function (res) {
        if (!res.ok) throw new Error((res.d.error && res.d.error.message) || "cannot load the graph");
        draw(box, res.d, count, small);
        box.setAttribute("data-nodes", String(res.d.nodes.length));
      })
      .catch(function (err) { if (count) count.textContent = String(err.message || err); box.setAttribute("data-error", "1"); });
  }

  var graph = document.getElementById("graph");
  if (graph && window.fetch) loadGraph(graph, document.getElementById("graph-count"), false);

  // Beside a note: its local graph (one hop), when the Graph view is allowed.
  var aside = document.querySelector("aside.links");
  var canGraph = document.querySelector('nav a[href="/ui/graph"]');
  if (aside && canGraph && location.pathname === "/ui/note" && window.fetch) {
    var params = new URLSearchParams(location.search), q = new URLSearchParams();
    if (params.get("path")) q.set("path", params.get("path")); else if (params.get("note")) q.set("note", params.get("note"));
    if (q.toString()) {
      var sec = document.createElement("section"), h = document.createElement("h2"), box = document.createElement("div");
      var cnt = document.createElement("p"), more = document.createElement("a");
      sec.className = "local-graph"; h.textContent = "Graph"; box.className = "graph small"; box.id = "local-graph";
      cnt.className = "meta"; more.href = "/ui/graph?" + q.toString() + "&depth=2"; more.textContent = "Open the graph (2 hops)";
      q.set("limit", "60");
      box.setAttribute("data-src", "/ui/graph.json?" + q.toString());
      sec.appendChild(h); sec.appendChild(box); sec.appendChild(cnt); sec.appendChild(more);
      aside.insertBefore(sec, aside.firstChild);
      loadGraph(box, cnt, true);
    }
  }

  // ---- Live updates ------------------------------------------------------

  if (!window.EventSource || !window.fetch) return;
  var live = document.getElementById("live");
  var activity = location.pathname === "/ui/activity" ? document.getElementById("results") : null;
  var badge = document.getElementById("pending-count");
  var kinds = [];
  if (live) kinds.push("index", "watcher", "note");
  if (activity) kinds.push("write");
  // The badge is counted on every page, and kept live on the pages that
  // hold a stream anyway: a stream per open note tab would use up the
  // browser's six connections to this server.
  if (badge && kinds.length) kinds.push("confirmation");

  function text(id, s) { var e = document.getElementById(id); if (e) e.textContent = s; }
  function bar(id, done, total) {
    var b = document.getElementById(id);
    if (!b) return;
    b.max = Math.max(total, 1); b.value = Math.min(done, b.max);
    b.setAttribute("data-done", String(done)); b.setAttribute("data-total", String(total));
  }
  function num(x) { return typeof x === "number" ? x : 0; }

  var statusBusy = false, statusAgain = false;
  function refreshStatus() {
    if (statusBusy) { statusAgain = true; return; }
    statusBusy = true;
    fetch("/ui/status.json", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) return;
        var v = s.vectors || {}, job = v.job || {}, w = s.watcher;
        if (!s.sync || !s.sync.running) {
          bar("sync-bar", s.notes, s.notes);
          text("sync-text", s.notes + " notes indexed · idle");
        }
        if (!job.running) {
          bar("embed-bar", num(v.embedded), num(v.total));
          text("embed-text", num(v.embedded) + " of " + num(v.total) + " have a vector" + (job.last_error ? " · embedder failed: " + job.last_error : ""));
        }
        var lag = w ? w.state + " · queue " + w.queue + (s.watcher_lag_ms > 0 ? " · lag " + (s.watcher_lag_ms / 1000).toFixed(1) + " s" : " · no lag") : "off";
        text("lag-text", lag);
      })
      .catch(function () {})
      .then(function () { statusBusy = false; if (statusAgain) { statusAgain = false; refreshStatus(); } });
  }

  var activityTimer = null;
  function refreshActivity() {
    clearTimeout(activityTimer);
    activityTimer = setTimeout(function () {
      fetch("/ui/activity", { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var doc = new DOMParser().parseFromString(html, "text/html"), fresh = doc.getElementById("results");
          if (fresh) { activity.replaceWith(document.importNode(fresh, true)); activity = document.getElementById("results"); }
        })
        .catch(function () {});
    }, 200);
  }

  function refreshBadge() {
    fetch("/ui/pending.json", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d || !d.ids) return;
        badge.textContent = String(d.ids.length);
        badge.hidden = d.ids.length === 0;
      })
      .catch(function () {});
  }
  if (badge) refreshBadge();
  if (!kinds.length) return;

  var es = new EventSource("/ui/events?kinds=" + encodeURIComponent(kinds.join(",")));
  es.onopen = function () {
    document.body.setAttribute("data-live", "open");
    text("live-state", "Live: updates as the server works.");
    if (live) refreshStatus();
  };
  es.onerror = function () { document.body.setAttribute("data-live", "lost"); text("live-state", "Live updates lost; reconnecting…"); };
  function on(kind, fn) {
    es.addEventListener(kind, function (m) { var ev; try { ev = JSON.parse(m.data); } catch (e) { return; } fn(ev.data || {}, ev); });
  }
  if (live) {
    on("index.sync_started", function () { text("sync-text", "syncing…"); });
    on("index.sync_progress", function (d) {
      bar("sync-bar", d.done, d.total);
      text("sync-text", d.done + " of " + d.total + " files" + (d.rate ? " · " + d.rate + " files/s" : "") + (d.full ? " · full sync" : ""));
    });
    on("index.sync_finished", function (d) {
      var seen = num(d.indexed) + num(d.unchanged);
      bar("sync-bar", seen, seen);
      text("sync-text", "synced: " + num(d.indexed) + " indexed, " + num(d.unchanged) + " unchanged, " + num(d.removed) + " removed in " + num(d.duration_ms) + " ms");
      refreshStatus();
    });
    on("index.sync_failed", function (d) { text("sync-text", "sync failed: " + d.error); });
    on("index.embed_progress", function (d) {
      bar("embed-bar", d.done, d.total);
      text("embed-text", "embedding: " + d.done + " of " + d.total + (d.rate ? " · " + d.rate + "/s" : ""));
    });
    on("index.embed_finished", refreshStatus);
    on("index.embed_failed", refreshStatus);
    ["note.created", "note.updated", "note.deleted", "note.moved", "watcher.started", "watcher.stopped", "watcher.error", "watcher.overflow", "watcher.reconciled"].forEach(function (k) {
      on(k, refreshStatus);
    });
    // The watcher's lag grows while changes wait: look again now and then.
    setInterval(function () { if (!document.hidden) refreshStatus(); }, 5000);
  }
  if (activity) on("write.applied", refreshActivity);
  if (badge) {
    on("confirmation.pending", refreshBadge);
    on("confirmation.decided", refreshBadge);
  }
})();
