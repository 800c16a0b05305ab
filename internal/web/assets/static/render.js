// render.js draws what the note view leaves marked for the browser:
// $math$ with the bundled KaTeX and ```mermaid diagrams with the bundled
// mermaid (vendor/, served from the binary: no network). The page loads
// it only when the note has math or a diagram.
(function () {
  'use strict';
  function math() {
    if (!window.katex) return;
    document.querySelectorAll('.rendered .math').forEach(function (el) {
      var tex = el.textContent;
      try {
        window.katex.render(tex, el, {
          displayMode: el.classList.contains('math-display'),
          throwOnError: false, trust: false, maxExpand: 1000, maxSize: 100
        });
        el.classList.add('math-rendered');
      } catch (e) {
        el.textContent = tex;
        el.classList.add('math-error');
        el.title = String(e && e.message || e);
      }
    });
  }
  function diagrams() {
    if (!window.mermaid) return;
    var dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
    window.mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: dark ? 'dark' : 'default' });
    window.mermaid.run({ querySelector: '.rendered pre.mermaid' }).catch(function (e) {
      document.querySelectorAll('.rendered pre.mermaid:not([data-processed])').forEach(function (el) {
        el.classList.add('mermaid-error');
        el.title = String(e && e.message || e);
      });
    });
  }
  document.addEventListener('DOMContentLoaded', function () { math(); diagrams(); });
})();
