// Vigil console: live refresh of the alert queue and its keyboard. Everything works without it; it
// only adds. Served from the binary under a CSP that allows script from /console/static only.
(function () {
  "use strict";
  var table = document.getElementById("queue");
  if (!table) { return; }
  var body = table.tBodies[0];
  var bulk = document.getElementById("bulk");
  var selected = -1;

  var live = document.createElement("span");
  live.id = "live";
  live.setAttribute("role", "status");
  var total = document.getElementById("total");
  if (total) { total.parentNode.appendChild(live); }
  function say(text) { live.textContent = text; }

  function rows() { return Array.prototype.filter.call(body.rows, function (r) { return r.dataset.id; }); }

  // select marks row i and moves the keyboard focus to its title link, so Enter opens it the way a
  // link opens (the script never takes Enter: on a focused link or button it does what it says).
  function select(i, focus) {
    var rs = rows();
    if (rs.length === 0) { return; }
    i = Math.max(0, Math.min(i, rs.length - 1));
    rs.forEach(function (r, j) { r.classList.toggle("sel", j === i); });
    selected = i;
    var link = rs[i].querySelector("td.title a");
    if (focus !== false && link) { link.focus(); }
    rs[i].scrollIntoView({ block: "nearest" });
  }
  // Clicking or tabbing into a row selects it too.
  table.addEventListener("focusin", function (e) {
    var r = e.target.closest && e.target.closest("tr[data-id]");
    if (r) { select(rows().indexOf(r), false); }
  });

  // Live refresh: every data-every ms (10 s by default) ask for the same page's rows. The indicator
  // says what is true: up to date (with the time), new alerts, a failed refresh, or a session that
  // has ended (with a link to sign in again and come back here), after which it stops asking.
  var known = {};
  rows().forEach(function (r) { known[r.dataset.id] = 0; });
  var timer = null;
  function signedOut() {
    clearInterval(timer);
    live.textContent = "";
    var note = document.createElement("span");
    note.className = "live-off";
    note.id = "live-expired";
    note.textContent = "Not refreshing: your session has ended. ";
    var a = document.createElement("a");
    a.href = "/console/login?next=" + encodeURIComponent(location.pathname + location.search);
    a.id = "live-signin";
    a.textContent = "Sign in again";
    live.appendChild(note);
    live.appendChild(a);
  }
  function refresh() {
    // A selection in progress is not wiped by new rows.
    if (document.hidden || table.querySelector("input.pick:checked")) { return; }
    var url = table.dataset.refresh + (table.dataset.refresh.indexOf("?") < 0 ? "?" : "&") + "partial=rows";
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
      if (res.status === 401 || (res.redirected && res.url.indexOf("/console/login") >= 0)) { signedOut(); return null; }
      if (!res.ok) { say("Refresh failed (" + res.status + ") at " + new Date().toLocaleTimeString() + "; retrying."); return null; }
      var n = res.headers.get("X-Vigil-Total");
      if (n !== null && total) { total.textContent = total.textContent.replace(/^\d+/, n); }
      return res.text();
    }).then(function (html) {
      // A box ticked while the answer was on its way: keep the ticks, swap nothing.
      if (html === null || table.querySelector("input.pick:checked")) { return; }
      var keep = selected >= 0 && rows()[selected] ? rows()[selected].dataset.id : null;
      var hadFocus = body.contains(document.activeElement);
      var tmp = document.createElement("tbody");
      tmp.innerHTML = html; // server-rendered by html/template, every value escaped
      body.replaceWith(tmp);
      body = tmp;
      var fresh = 0, now = Date.now(), at = -1;
      rows().forEach(function (r, j) {
        if (!(r.dataset.id in known)) { known[r.dataset.id] = now; fresh++; }
        if (known[r.dataset.id] > 0 && now - known[r.dataset.id] < 30000) { r.classList.add("new"); }
        if (r.dataset.id === keep) { at = j; }
      });
      if (at >= 0) { select(at, hadFocus); } else { selected = -1; }
      say(fresh > 0 ? fresh + " new alert(s)" : "up to date " + new Date().toLocaleTimeString());
    }).catch(function () { say("Refresh failed at " + new Date().toLocaleTimeString() + " (no answer); retrying."); });
  }
  timer = setInterval(refresh, parseInt(table.dataset.every, 10) || 10000);

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

  // ticked makes sure the bulk form acts on something: the ticked alerts, else the selected one
  // (ticked for it). Returns how many, 0 when there is nothing to act on.
  function ticked() {
    var n = picks().filter(function (b) { return b.checked; }).length;
    if (n === 0 && selected >= 0 && rows()[selected]) {
      var box = rows()[selected].querySelector("input.pick");
      if (box) { box.checked = true; n = 1; }
    }
    if (n === 0) { say("Select an alert first (j / k, x)."); }
    return n;
  }
  function submitBulk(buttonID) {
    var button = document.getElementById(buttonID);
    var apply = bulk.querySelector('input[name="apply_to"][value="selected"]');
    if (apply) { apply.checked = true; }
    if (bulk.requestSubmit) { bulk.requestSubmit(button); } else { button.click(); }
  }
  var closeDialog = document.getElementById("close-dialog");
  if (closeDialog && bulk) {
    closeDialog.addEventListener("close", function () {
      if (closeDialog.returnValue !== "close") { return; }
      bulk.querySelector('select[name="status"]').value = "Closed";
      bulk.querySelector('select[name="close_classification"]').value = document.getElementById("close-as").value;
      submitBulk("bulk-status");
    });
  }

  table.setAttribute("data-keys", "on"); // the keys below are listening (tests wait for it)
  document.addEventListener("keydown", function (e) {
    var t = e.target, tag = (t.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || t.isContentEditable || e.ctrlKey || e.metaKey || e.altKey ||
      document.querySelector("dialog[open]")) { return; }
    var link, n;
    switch (e.key) {
      case "j": select(selected + 1); break;
      case "k": select(selected < 0 ? 0 : selected - 1); break;
      case "o":
        if (selected >= 0 && rows()[selected]) { link = rows()[selected].querySelector("td.title a"); }
        break;
      case "x":
        if (selected >= 0 && rows()[selected] && rows()[selected].querySelector("input.pick")) {
          var box = rows()[selected].querySelector("input.pick");
          box.checked = !box.checked;
          say(picks().filter(function (b) { return b.checked; }).length + " ticked");
        }
        break;
      case "a":
        if (bulk && ticked() > 0) { submitBulk("bulk-assign-me"); }
        break;
      case "c":
        if (bulk && closeDialog && (n = ticked()) > 0) {
          document.getElementById("close-count").textContent = String(n);
          closeDialog.returnValue = "";
          closeDialog.showModal();
          document.getElementById("close-as").focus();
        }
        break;
      case "/": document.getElementById("search").focus(); document.getElementById("search").select(); break; // typing replaces it
      case "?": document.getElementById("keys-help").showModal(); break;
      case "n": link = document.getElementById("next"); break;
      case "p": link = document.getElementById("prev"); break;
      default: return;
    }
    e.preventDefault();
    if (link) { window.location.assign(link.href); }
  });
})();
