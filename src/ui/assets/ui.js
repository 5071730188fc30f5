// Live updates: the server streams the page's content again whenever its watches see a
// change (server-sent events on the page's own address); it replaces <main>. The browser
// reconnects by itself when the controller restarts and gets the current page first.
(function () {
  "use strict";
  if (!window.EventSource) {
    return;
  }
  var live = document.getElementById("live");
  var source = new EventSource(window.location.pathname + window.location.search);
  source.addEventListener("page", function (event) {
    document.getElementById("page").innerHTML = event.data;
    live.hidden = false;
  });
  source.onerror = function () {
    live.hidden = true;
  };
})();
