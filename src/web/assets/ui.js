// Live updates: the server streams the page's content again whenever its watches see a
// change (server-sent events on the page's own address); it replaces <main>. The browser
// reconnects by itself when the controller restarts and gets the current page first.
//
// Actions: a viewer who gives a Kubernetes bearer token sees the page's action buttons. The
// token is kept in this tab's sessionStorage only (never a cookie, so the browser never sends
// it by itself) and sent in the Authorization header of the action's POST, with the page's
// CSRF token in X-Flotilla-CSRF; the controller checks both, then asks the cluster's RBAC.
(function () {
  "use strict";
  var TOKEN_KEY = "flotilla-token";
  var csrf = document.querySelector('meta[name="flotilla-csrf"]').content;
  var result = document.getElementById("action-result");
  var form = document.getElementById("viewer");
  var input = document.getElementById("token");
  var forget = document.getElementById("token-forget");

  function token() {
    try {
      return window.sessionStorage.getItem(TOKEN_KEY);
    } catch (e) {
      return null;
    }
  }

  // Shows the action buttons when a token was given, hides them otherwise.
  function showActions() {
    var acting = !!token();
    document.querySelectorAll(".actions").forEach(function (actions) {
      actions.hidden = !acting;
    });
    input.hidden = acting;
    document.getElementById("token-use").hidden = acting;
    forget.hidden = !acting;
  }

  function say(text, failed) {
    result.textContent = text;
    result.className = failed ? "error" : "";
    result.hidden = false;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var given = input.value.trim();
    input.value = "";
    if (given) {
      window.sessionStorage.setItem(TOKEN_KEY, given);
    }
    showActions();
  });
  forget.addEventListener("click", function () {
    window.sessionStorage.removeItem(TOKEN_KEY);
    result.hidden = true;
    showActions();
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-path]") : null;
    if (!button || !token()) {
      return;
    }
    button.disabled = true;
    fetch(button.dataset.path, {
      method: "POST",
      credentials: "omit",
      cache: "no-store",
      headers: { "Authorization": "Bearer " + token(), "X-Flotilla-CSRF": csrf }
    }).then(function (response) {
      return response.text().then(function (text) {
        var status = response.status + " " + response.statusText;
        say(status + ": " + text.trim(), !response.ok);
      });
    }, function (error) {
      say("the request failed: " + error, true);
    }).then(function () {
      button.disabled = false;
    });
  });
  // An object's panel shows manifests and Events only to a viewer whose token may read the
  // object: with a token, its link is fetched with the token and the answer replaces <main>.
  document.addEventListener("click", function (event) {
    var anchor = event.target.closest ? event.target.closest("a[href*='/object?']") : null;
    if (!anchor || !token()) {
      return;
    }
    event.preventDefault();
    fetch(anchor.getAttribute("href"), {
      credentials: "omit",
      cache: "no-store",
      headers: { "Authorization": "Bearer " + token() }
    }).then(function (response) {
      return response.text();
    }).then(function (text) {
      var shown = new DOMParser().parseFromString(text, "text/html").getElementById("page");
      document.getElementById("page").innerHTML = shown ? shown.innerHTML : "";
      showActions();
    }, function (error) {
      say("the request failed: " + error, true);
    });
  });
  showActions();

  // A bake's countdown (the line carrying `data-until`) ticks each second between updates.
  function countdown() {
    document.querySelectorAll("[data-until]").forEach(function (line) {
      var left = Math.max(0, Math.round((Date.parse(line.dataset.until) - Date.now()) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      var text = h > 0 ? h + "h" + m + "m" + s + "s" : m > 0 ? m + "m" + s + "s" : s + "s";
      line.textContent = "bake: " + text + " left";
    });
  }
  window.setInterval(countdown, 1000);

  // Pages read when opened (a resource tree, an object's panel) are not live.
  if (!window.EventSource || document.querySelector("#page [data-static]")) {
    return;
  }
  var live = document.getElementById("live");
  var source = new EventSource(window.location.pathname + window.location.search);
  source.addEventListener("page", function (event) {
    document.getElementById("page").innerHTML = event.data;
    showActions();
    live.hidden = false;
  });
  source.onerror = function () {
    live.hidden = true;
  };
})();
