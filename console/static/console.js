// Vigil console: live refresh of the alert queue and keyboard navigation. Everything works without
// it; it only adds. Served from the binary under a CSP that allows script from /console/static only.
(function () {
  "use strict";
  var table = document.getElementById("queue");
  if (!table) { return; }
  var body = table.tBodies[0];
  var selected = -1;

  function rows() { return Array.prototype.filter.call(body.rows, function (r) { return r.dataset.id; }); }

  function select(i) {
    var rs = rows();
    if (rs.length === 0) { return; }
    i = Math.max(0, Math.min(i, rs.length - 1));
    rs.forEach(function (r, j) { r.classList.toggle("sel", j === i); r.setAttribute("aria-selected", j === i ? "true" : "false"); });
    selected = i;
    rs[i].scrollIntoView({ block: "nearest" });
  }

  // Live refresh: every data-every ms (10 s by default) ask for the same page's rows; new alerts are marked until the next refresh.
  // known: alert id → when it first appeared (0: on the page as loaded); new ones stay marked 30 s.
  var known = {};
  rows().forEach(function (r) { known[r.dataset.id] = 0; });
  function refresh() {
    // A selection in progress is not wiped by new rows.
    if (document.hidden || table.querySelector("input.pick:checked")) { return; }
    var url = table.dataset.refresh + (table.dataset.refresh.indexOf("?") < 0 ? "?" : "&") + "partial=rows";
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
      if (res.redirected || !res.ok) { return null; }
      var n = res.headers.get("X-Vigil-Total"), total = document.getElementById("total");
      if (n !== null && total) { total.textContent = total.textContent.replace(/^\d+/, n); }
      return res.text();
    }).then(function (html) {
      if (html === null) { return; }
      var keep = selected >= 0 && rows()[selected] ? rows()[selected].dataset.id : null;
      var tmp = document.createElement("tbody");
      tmp.innerHTML = html; // server-rendered by html/template, every value escaped
      body.replaceWith(tmp);
      body = tmp;
      var fresh = 0, now = Date.now();
      rows().forEach(function (r, j) {
        if (!(r.dataset.id in known)) { known[r.dataset.id] = now; fresh++; }
        if (known[r.dataset.id] > 0 && now - known[r.dataset.id] < 30000) { r.classList.add("new"); }
        if (r.dataset.id === keep) { selected = j; }
      });
      if (keep !== null) { select(selected); }
      var live = document.getElementById("live");
      if (live) { live.textContent = fresh > 0 ? fresh + " new alert(s)" : "up to date " + new Date().toLocaleTimeString(); }
    }).catch(function () {});
  }
  var live = document.createElement("span");
  live.id = "live";
  live.setAttribute("aria-live", "polite");
  var total = document.getElementById("total");
  if (total) { total.parentNode.appendChild(live); }
  setInterval(refresh, parseInt(table.dataset.every, 10) || 10000);

  // Multi-select: shift-click ticks the range from the last box clicked; the header box ticks the page.
  function picks() { return Array.prototype.slice.call(table.querySelectorAll("input.pick")); }
  var last = -1;
  table.addEventListener("click", function (e) {
    var box = e.target;
    if (!box.classList || !box.classList.contains("pick")) { return; }
    var all = picks(), i = all.indexOf(box);
    if (e.shiftKey && last >= 0 && last < all.length) {
      var a = Math.min(last, i), b = Math.max(last, i);
      for (var j = a; j <= b; j++) { all[j].checked = box.checked; }
    }
    last = i;
  });
  var pickAll = document.getElementById("pick-all");
  if (pickAll) {
    pickAll.addEventListener("change", function () { picks().forEach(function (b) { b.checked = pickAll.checked; }); });
  }

  document.addEventListener("keydown", function (e) {
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || e.ctrlKey || e.metaKey || e.altKey) { return; }
    var link;
    switch (e.key) {
      case "j": select(selected + 1); break;
      case "k": select(selected < 0 ? 0 : selected - 1); break;
      case "Enter": case "o":
        if (selected >= 0 && rows()[selected]) { link = rows()[selected].querySelector("a"); }
        break;
      case "/": document.getElementById("search").focus(); break;
      case "n": link = document.getElementById("next"); break;
      case "p": link = document.getElementById("prev"); break;
      default: return;
    }
    e.preventDefault();
    if (link) { window.location.assign(link.href); }
  });
})();
