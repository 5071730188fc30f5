// Live updates: the server streams the page's content again whenever its watches see a
// change (server-sent events on the page's own address); it replaces <main>. The browser
// reconnects by itself when the controller restarts and gets the current page first.
//
// Actions: a viewer who gives a Kubernetes bearer token sees the page's action buttons. The
// token is kept in this tab's sessionStorage only (never a cookie, so the browser never sends
// it by itself) and sent in the Authorization header of the action's POST, with the page's
// CSRF token in X-Flotilla-CSRF; the controller checks both, then asks the cluster's RBAC.
// The same token reads an object's panel, its live Events and its pods' logs.
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
  // Streams read for the viewer (an object's Events, a pod's log) are fetched with the token
  // (an EventSource cannot send it) and read as server-sent events; leaving the panel ends them.
  var streams = [];
  var logStream = null;
  function stopStreams() {
    streams.forEach(function (controller) { controller.abort(); });
    streams = [];
    logStream = null;
  }
  // Reads url's events, calling onEvent(name, data); onRefused(status, text) when refused.
  function follow(url, onEvent, onRefused) {
    var controller = new AbortController();
    streams.push(controller);
    fetch(url, {
      credentials: "omit",
      cache: "no-store",
      signal: controller.signal,
      headers: { "Authorization": "Bearer " + token(), "Accept": "text/event-stream" }
    }).then(function (response) {
      if (!response.ok) {
        return response.text().then(function (text) {
          onRefused(response.status, response.status + " " + response.statusText + ": " + text.trim());
        });
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var buffer = "";
      function read() {
        return reader.read().then(function (chunk) {
          if (chunk.done) {
            return;
          }
          buffer += decoder.decode(chunk.value, { stream: true });
          var end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            var name = "message";
            var data = [];
            buffer.slice(0, end).split("\n").forEach(function (line) {
              if (line.indexOf("event: ") === 0) {
                name = line.slice(7);
              } else if (line.indexOf("data: ") === 0) {
                data.push(line.slice(6));
              }
            });
            buffer = buffer.slice(end + 2);
            if (data.length) {
              onEvent(name, data.join("\n"));
            }
          }
          return read();
        });
      }
      return read();
    }).catch(function () {});
    return controller;
  }
  // An open panel watches its object's Events.
  function startPanel() {
    var events = document.getElementById("object-events");
    if (events && events.dataset.stream && token()) {
      follow(events.dataset.stream, function (name, data) {
        if (name === "events") {
          events.innerHTML = data;
        }
      }, function () {});
    }
  }
  // The logs form: the chosen container's last lines, followed if asked, as text.
  document.addEventListener("submit", function (event) {
    var logs = event.target;
    if (logs.id !== "logs" || !token()) {
      return;
    }
    event.preventDefault();
    if (logStream) {
      logStream.abort();
    }
    var lines = document.getElementById("log-lines");
    var status = document.getElementById("log-status");
    lines.textContent = "";
    status.hidden = true;
    status.className = "";
    var target = logs.elements.target.value;
    var slash = target.indexOf("/");
    var url = logs.getAttribute("action") +
      "?namespace=" + encodeURIComponent(logs.dataset.namespace) +
      "&pod=" + encodeURIComponent(target.slice(0, slash)) +
      "&container=" + encodeURIComponent(target.slice(slash + 1)) +
      "&tailLines=" + encodeURIComponent(logs.elements.tailLines.value) +
      (logs.elements.previous.checked ? "&previous=true" : "") +
      (logs.elements.follow.checked ? "&follow=true" : "");
    logStream = follow(url, function (name, data) {
      if (name === "line") {
        lines.appendChild(document.createTextNode(data + "\n"));
      } else if (name === "end") {
        status.textContent = "end of the log";
        status.dataset.status = "end";
        status.hidden = false;
      }
    }, function (code, text) {
      status.textContent = text;
      status.dataset.status = code;
      status.className = "error";
      status.hidden = false;
    });
  });
  // An object's panel shows manifests, Events and logs only to a viewer whose token may read
  // them: with a token, its link is fetched with the token and the answer replaces <main>.
  document.addEventListener("click", function (event) {
    var anchor = event.target.closest ? event.target.closest("a[href*='/object?']") : null;
    if (!anchor || !token()) {
      return;
    }
    event.preventDefault();
    stopStreams();
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
      startPanel();
    }, function (error) {
      say("the request failed: " + error, true);
    });
  });
  showActions();

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
