/* The web book to WCAG 2.1 AA (issue 53; loaded by book/_ext/accessibility.py).
   A display formula wider than the column scrolls inside its div.math (ibp-a11y.css);
   a keyboard user must be able to reach it to scroll it (2.1.1), so it is a tab stop while,
   and only while, it overflows, named by its role. The theme does the same for code,
   outputs and tables. MathJax typesets after the page loads, and a resize or a zoom
   changes what overflows, so the check runs again then. */
(function () {
  "use strict";
  function markScrollableFormulas() {
    document.querySelectorAll("div.math").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", "formula, scrolls sideways");
      } else if (box.hasAttribute("tabindex")) {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  }
  var pending = null;
  function later() {
    clearTimeout(pending);
    pending = setTimeout(markScrollableFormulas, 200);
  }
  function start() {
    markScrollableFormulas();
    window.addEventListener("resize", later);
    var main = document.getElementById("main-content") || document.body;
    new MutationObserver(later).observe(main, { subtree: true, childList: true });
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(markScrollableFormulas);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
