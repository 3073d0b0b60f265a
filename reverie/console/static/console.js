// reverie console: the only script. It follows a running dream; every other action is a
// plain form. Nothing here is needed to read a page.
"use strict";

function followDream(box) {
  var url = box.getAttribute("data-status-url");
  var status = document.getElementById("dream-status");
  var text = document.getElementById("dream-text");
  var bar = document.getElementById("dream-bar");
  var started = Date.now();
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          // the console answers an error as JSON too: {"error": "..."}
          return response.json().catch(function () { return {}; }).then(function (body) {
            throw new Error(body && body.error ? body.error : "status " + response.status);
          });
        }
        return response.json();
      })
      .then(function (run) {
        status.textContent = run.status;
        text.textContent = run.status === "queued" || run.status === "running"
          ? run.text + " (" + Math.round((Date.now() - started) / 1000) + " s)"
          : run.text;
        if (run.done) {
          bar.setAttribute("max", "1");
          bar.setAttribute("value", "1");
          box.setAttribute("data-done", "yes");
          // the diary and the list of changes now hold this run: show them
          window.setTimeout(function () { window.location.assign(box.getAttribute("data-done-url")); }, 300);
        } else {
          window.setTimeout(poll, 400);
        }
      })
      .catch(function (error) {
        text.textContent = error && error.message && error.message.indexOf("status ") !== 0
          ? "Cannot follow the dream: " + error.message
          : "Lost track of the dream; reload the page to see where it is.";
      });
  }
  poll();
}

document.addEventListener("DOMContentLoaded", function () {
  var box = document.getElementById("dream-progress");
  if (box && box.getAttribute("data-done") === "no") { followDream(box); }
});
