// The only script of a run's pages: sorting and filtering the tables, and a tooltip for the
// roofline's points. Every page reads fully without it (the points carry SVG titles).
(function () {
  "use strict";

  function cellKey(row, i) {
    var c = row.cells[i];
    if (!c) return { num: false, v: "" };
    var s = c.getAttribute("data-sort");
    if (s !== null && s !== "") return { num: true, v: parseFloat(s) };
    return { num: false, v: c.textContent.trim() };
  }

  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, i) {
      th.classList.add("sortable");
      th.tabIndex = 0;
      var go = function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellKey(a, i), y = cellKey(b, i);
          // Rows without a figure go last either way.
          if (x.num !== y.num) return x.num ? -1 : 1;
          var d = x.num ? x.v - y.v : x.v.localeCompare(y.v, undefined, { numeric: true });
          return asc ? d : -d;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      };
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") go(); });
    });
  }

  function filterable(form) {
    var table = document.getElementById(form.getAttribute("data-for"));
    if (!table) return;
    form.hidden = false;
    var count = form.querySelector(".count");
    var apply = function () {
      var want = {};
      form.querySelectorAll("select").forEach(function (s) { want[s.getAttribute("data-key")] = s.value; });
      var shown = 0, rows = table.tBodies[0].rows;
      Array.prototype.forEach.call(rows, function (r) {
        var ok = Object.keys(want).every(function (k) { return !want[k] || r.getAttribute("data-" + k) === want[k]; });
        r.hidden = !ok;
        if (ok) shown++;
      });
      count.textContent = shown + " of " + rows.length + " rows";
    };
    form.addEventListener("change", apply);
    apply();
  }

  function tooltips() {
    var tip = document.getElementById("tip");
    if (!tip) return;
    var show = function (el) {
      tip.textContent = el.getAttribute("data-tip");
      tip.hidden = false;
      var r = el.getBoundingClientRect();
      tip.style.left = (window.scrollX + r.right + 8) + "px";
      tip.style.top = (window.scrollY + r.top - 4) + "px";
    };
    var hide = function () { tip.hidden = true; };
    document.querySelectorAll("[data-tip]").forEach(function (el) {
      el.addEventListener("mouseenter", function () { show(el); });
      el.addEventListener("focus", function () { show(el); });
      el.addEventListener("mouseleave", hide);
      el.addEventListener("blur", hide);
    });
  }

  document.querySelectorAll("table.results").forEach(sortable);
  document.querySelectorAll("form.filters").forEach(filterable);
  tooltips();
})();
