// Filters the experiments table as you type; the search form works without it.
(function () {
  "use strict";
  var q = document.getElementById("q"), rows = document.querySelectorAll("#experiments tbody tr[data-id]");
  var count = document.getElementById("count");
  if (!q) return;
  q.addEventListener("input", function () {
    var words = q.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].textContent.toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      rows[i].hidden = !ok;
      if (ok) shown++;
    }
    count.textContent = shown + " of " + rows.length + " experiment(s) shown.";
  });
})();
