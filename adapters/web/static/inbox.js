// hitl-bridge inbox: live refresh (ETag polling), deadline countdowns, JSON editor checks.
// Everything here is optional: without JS every page still works and every form submits.
"use strict";

(function () {
  function span(seconds) {
    if (seconds < 60) return seconds + " s";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + (seconds % 60) + " s";
    var hours = Math.floor(minutes / 60);
    if (hours < 48) return hours + " h " + (minutes % 60) + " min";
    return Math.floor(hours / 24) + " d " + (hours % 24) + " h";
  }

  function tickCountdowns() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("data-deadline"));
      if (isNaN(at)) return;
      var seconds = Math.round((at - now) / 1000);
      el.textContent = seconds >= 0 ? "in " + span(seconds) : "overdue by " + span(-seconds);
      el.classList.toggle("overdue", seconds < 0);
    });
  }

  function closeAnswerForm(status) {
    var form = document.getElementById("answer-form");
    if (!form || !status || status.getAttribute("data-open") !== "false") return;
    var section = document.getElementById("answer");
    var note = document.createElement("p");
    note.className = "notice";
    note.setAttribute("role", "status");
    note.id = "closed-notice";
    note.textContent = "This request is now " + status.getAttribute("data-state") + ": the form was closed.";
    section.replaceChildren(note);
  }

  function live(el) {
    var url = el.getAttribute("data-live-url");
    var interval = parseInt(el.getAttribute("data-live-interval"), 10) || 1000;
    var etag = null;
    var busy = false;
    function poll() {
      if (busy || document.hidden) return;
      busy = true;
      var headers = etag ? { "If-None-Match": etag } : {};
      fetch(url, { headers: headers, credentials: "same-origin", cache: "no-store" })
        .then(function (response) {
          if (response.status === 401) { window.location.reload(); return null; }
          if (response.status !== 200) return null;
          etag = response.headers.get("ETag");
          return response.text();
        })
        .then(function (html) {
          if (html === null || html === undefined) return;
          if (etag === el.getAttribute("data-etag")) return;
          el.innerHTML = html;
          el.setAttribute("data-etag", etag || "");
          el.setAttribute("data-updated", String(Date.now()));
          tickCountdowns();
          closeAnswerForm(el.querySelector(".status"));
        })
        .catch(function () { /* the daemon restarts or the network blips: try again later */ })
        .finally(function () { busy = false; });
    }
    setInterval(poll, interval);
  }

  function checkJson(area) {
    var error = document.getElementById("err-" + area.name);
    var message = "";
    if (area.value.trim() !== "") {
      try {
        var value = JSON.parse(area.value);
        if (value === null || typeof value !== "object") message = "expected a JSON object or list";
      } catch (e) {
        message = "not valid JSON: " + e.message;
      }
    }
    area.setCustomValidity(message);
    if (error) {
      error.textContent = message;
      error.hidden = message === "";
    }
    return message === "";
  }

  function jsonEditors() {
    document.querySelectorAll("textarea[data-json]").forEach(function (area) {
      area.addEventListener("input", function () { checkJson(area); });
      checkJson(area);
    });
    document.querySelectorAll("[data-format-json]").forEach(function (button) {
      var area = document.getElementById(button.getAttribute("data-format-json"));
      button.hidden = false;
      button.addEventListener("click", function () {
        if (checkJson(area) && area.value.trim() !== "") {
          area.value = JSON.stringify(JSON.parse(area.value), null, 2);
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live-url]").forEach(live);
    jsonEditors();
    tickCountdowns();
    setInterval(tickCountdowns, 1000);
    document.documentElement.setAttribute("data-js", "ready");
  });
})();
