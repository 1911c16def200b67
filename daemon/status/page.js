// Refreshes the live part of the status page every few seconds without a full reload.
(function () {
  var live = document.getElementById("live");
  if (!live) return;
  var every = Number(live.dataset.refresh || "3000");
  function tick() {
    fetch("live", {cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      live.innerHTML = html;
      document.getElementById("stale").hidden = true;
    }).catch(function () {
      document.getElementById("stale").hidden = false;
    }).finally(function () {
      setTimeout(tick, every);
    });
  }
  setTimeout(tick, every);
})();
