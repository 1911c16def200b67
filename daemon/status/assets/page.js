// Refreshes the live part of a ticketd page every few seconds without a full reload. The
// page works without it: every figure is in the HTML the server sent, every action a form.
(function () {
  var live = document.getElementById("live");
  if (!live || !live.dataset.refresh) return;
  var url = live.dataset.refresh, every = 3000;
  function openDetails() {
    var open = {};
    live.querySelectorAll("details").forEach(function (d, i) { open[i] = d.open; });
    return open;
  }
  function tick() {
    fetch(url, {cache: "no-store", credentials: "same-origin"}).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      var before = openDetails(), y = window.scrollY;
      live.innerHTML = html;
      live.querySelectorAll("details").forEach(function (d, i) { if (i in before) d.open = before[i]; });
      window.scrollTo(0, y);
      var stale = document.getElementById("stale");
      if (stale) stale.hidden = true;
    }).catch(function () {
      var stale = document.getElementById("stale");
      if (stale) stale.hidden = false;
    }).finally(function () {
      setTimeout(tick, every);
    });
  }
  setTimeout(tick, every);
})();
