// hitl-bridge inbox: live refresh (ETag polling), countdowns and local times, the undo window
// of one-tap answers, the live diff of edited arguments, and keyboard shortcuts.
// Everything here is optional: without JS every page works and every form submits (one-tap
// answers then go through a check step on the server).
"use strict";

(function () {
  // ---- time -------------------------------------------------------------------------------
  function span(seconds) {
    if (seconds < 60) return seconds + " s";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min";
    var hours = Math.floor(minutes / 60);
    if (hours < 48) return hours + " h" + (minutes % 60 ? " " + (minutes % 60) + " min" : "");
    return Math.floor(hours / 24) + " d " + (hours % 24) + " h";
  }

  function tickCountdowns() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("data-deadline"));
      if (isNaN(at)) return;
      var seconds = Math.round((at - now) / 1000);
      var text = seconds >= 0 ? "in " + span(seconds) : "overdue by " + span(-seconds);
      if (el.textContent !== text) el.textContent = text;
      var due = el.closest(".due");
      if (due) due.classList.toggle("overdue", seconds < 0);
    });
  }

  function localClocks(root) {
    var today = new Date().toDateString();
    (root || document).querySelectorAll("time[data-clock]").forEach(function (el) {
      var at = new Date(el.getAttribute("datetime"));
      if (isNaN(at.getTime())) return;
      // one format everywhere (the server's, the CLI's, chat messages'): 24-hour, with the zone
      var clock = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short" });
      el.textContent = at.toDateString() === today ? clock
        : at.toLocaleDateString([], { day: "numeric", month: "short" }) + " " + clock;
    });
  }

  function announce(text) {
    var region = document.getElementById("announce");
    if (region) region.textContent = text;
  }

  // ---- live fragments -----------------------------------------------------------------------
  // A fragment is a list of elements with ids; each replaces the page's element with that id.
  function swapIn(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    var focused = document.activeElement && document.activeElement.id;
    Array.prototype.slice.call(template.content.children).forEach(function (fresh) {
      var old = fresh.id && document.getElementById(fresh.id);
      if (old) old.replaceWith(fresh);
    });
    if (focused && document.activeElement === document.body) {
      var again = document.getElementById(focused);
      if (again) again.focus({ preventScroll: true });
    }
    localClocks();
    tickCountdowns();
  }

  function live(el) {
    var url = el.getAttribute("data-live-url");
    var interval = parseInt(el.getAttribute("data-live-interval"), 10) || 1000;
    var etag = null;
    var seen = null;  // the daemon's version at the last look: it holds the next look until a change
    var inflight = null;  // the look in flight; a hidden tab gives its connection back (browsers
    // open only a few connections per site: held looks of background tabs would starve the rest)
    document.addEventListener("visibilitychange", function () {
      if (document.hidden && inflight) inflight.abort();
    });
    function poll() {
      if (document.hidden || undo.sending) { setTimeout(poll, interval); return; }
      var headers = {};
      if (etag) headers["If-None-Match"] = etag;
      if (seen) headers["X-Live-Seen"] = seen;
      var asked = seen;
      var ok = false;
      var started = Date.now();
      inflight = new AbortController();
      fetch(url, { headers: headers, credentials: "same-origin", cache: "no-store", signal: inflight.signal })
        .then(function (response) {
          if (response.status === 401) { window.location.reload(); return null; }
          seen = response.headers.get("X-Live-Version");
          ok = response.status === 200 || response.status === 304;
          if (response.status !== 200) return null;
          etag = response.headers.get("ETag");
          return response.text();
        })
        .then(function (html) {
          if (html === null || html === undefined) return;
          var before = countRows();
          swapIn(html);
          el.setAttribute("data-updated", String(Date.now()));
          var after = countRows();
          if (before !== null && after !== null && after > before) {
            announce((after - before) + " new request" + (after - before === 1 ? "" : "s") + " in the list.");
          }
          closeAnswerForm();
        })
        .catch(function () { /* the daemon restarts or the network blips: try again later */ })
        .finally(function () {
          inflight = null;
          // held by the daemon (it knew our version): look again soon, it answers at the next
          // change, but never more often than once an interval (a busy daemon changes all the
          // time); otherwise (first look, another replica, an error) after the usual interval
          var held = ok && asked && seen && asked.split(".")[0] === seen.split(".")[0];
          setTimeout(poll, held ? Math.max(50, interval - (Date.now() - started)) : interval);
        });
    }
    setTimeout(poll, interval);
  }

  function countRows() {
    var list = document.getElementById("rows-list");
    return list ? parseInt(list.getAttribute("data-count"), 10) : null;
  }

  // someone else answered (or it expired) while this form was open: close it, say how it ended
  function closeAnswerForm() {
    var top = document.getElementById("request-top");
    var section = document.getElementById("answer");
    if (!top || !section || top.getAttribute("data-open") !== "false" || undo.sending) return;
    var sentence = top.querySelector(".decision");
    var note = document.createElement("p");
    note.className = "notice";
    note.id = "closed-notice";
    note.setAttribute("role", "status");
    note.textContent = "This request was closed meanwhile: " +
      (sentence ? sentence.textContent.trim() : top.getAttribute("data-state")) + ".";
    undo.cancel(true);
    section.replaceChildren(note);
    document.body.classList.remove("has-bar");
  }

  // ---- one-tap answers: held for a few seconds, then sent -----------------------------------
  // Nothing is recorded until the window ends (or "Send now"). Leaving the page or hiding it
  // (switching apps, locking the phone) sends the answer at once rather than losing it.
  var undo = {
    form: null, button: null, hidden: null, timer: null, left: 0, sending: false, beaconed: false,

    setup: function (form) {
      this.form = form;
      var self = this;
      form.addEventListener("submit", function (event) {
        var button = event.submitter;
        if (!button || !button.hasAttribute("data-one-tap")) return;
        event.preventDefault();
        if (self.button || self.sending) return;
        var reason = document.getElementById("in-reason");
        if (reason && !reason.checkValidity()) { reason.reportValidity(); return; }
        self.start(button);
      });
      document.getElementById("undo-cancel").addEventListener("click", function () { self.cancel(false); });
      document.getElementById("undo-now").addEventListener("click", function () { self.send(); });
      document.addEventListener("visibilitychange", function () {
        if (document.visibilityState === "hidden") self.leave();
        else if (self.beaconed) window.location.reload();
      });
      window.addEventListener("pagehide", function () { self.leave(); });
      window.addEventListener("pageshow", function (event) { if (event.persisted && self.beaconed) window.location.reload(); });
    },

    start: function (button) {
      var seconds = parseInt(this.form.getAttribute("data-undo-seconds"), 10) || 5;
      this.button = button;
      this.hidden = document.createElement("input");
      this.hidden.type = "hidden";
      this.hidden.name = button.name;
      this.hidden.value = button.value;
      this.form.appendChild(this.hidden);
      this.left = seconds;
      document.getElementById("actions").hidden = true;
      var box = document.getElementById("undo");
      box.hidden = false;
      document.getElementById("undo-text").textContent =
        (button.getAttribute("data-undo-label") || "Sending") + ": sent in " + seconds + " seconds unless you undo.";
      this.show();
      document.getElementById("undo-cancel").focus();
      var self = this;
      this.timer = setInterval(function () {
        self.left -= 1;
        self.show();
        if (self.left <= 0) self.send();
      }, 1000);
    },

    show: function () {
      document.getElementById("undo-left").textContent = Math.max(this.left, 0) + " s";
    },

    stop: function () {
      if (this.timer !== null) clearInterval(this.timer);
      this.timer = null;
    },

    cancel: function (quiet) {
      if (!this.button || this.sending) return;
      this.stop();
      if (this.hidden) this.hidden.remove();
      var button = this.button;
      this.button = this.hidden = null;
      document.getElementById("undo").hidden = true;
      var actions = document.getElementById("actions");
      if (actions) actions.hidden = false;
      if (!quiet) {
        button.focus();
        announce("Undone: nothing was sent.");
      }
    },

    send: function () {
      if (!this.button || this.sending) return;
      this.stop();
      this.sending = true;
      document.getElementById("undo-text").textContent = "Sending…";
      document.getElementById("undo-cancel").disabled = true;
      document.getElementById("undo-now").disabled = true;
      this.form.submit();  // to the form's action: the answer, not the check step
    },

    leave: function () {
      if (!this.button || this.sending) return;
      this.stop();
      this.sending = true;
      if (navigator.sendBeacon && navigator.sendBeacon(this.form.action, new FormData(this.form))) {
        this.beaconed = true;
        document.getElementById("undo-text").textContent = "Sent when you left the page.";
      } else {
        this.form.submit();
      }
    }
  };

  // ---- edited arguments: checked and compared with the proposed ones as you type -----------
  function jsonDiff(a, b, path, out) {
    if (out.length >= 200 || canonical(a) === canonical(b)) return;
    var isObj = function (v) { return v !== null && typeof v === "object" && !Array.isArray(v); };
    if (isObj(a) && isObj(b)) {
      var keys = Object.keys(a).concat(Object.keys(b).filter(function (k) { return !(k in a); }));
      keys.forEach(function (key) {
        var child = path ? path + "." + key : key;
        if (!(key in b)) out.push({ path: child, kind: "removed", old: short(a[key]) });
        else if (!(key in a)) out.push({ path: child, kind: "added", new: short(b[key]) });
        else jsonDiff(a[key], b[key], child, out);
      });
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach(function (x, i) { jsonDiff(x, b[i], path + "[" + i + "]", out); });
      return;
    }
    out.push({ path: path || "(all)", kind: "changed", old: short(a), new: short(b) });
  }

  function canonical(value) {
    if (value === null || typeof value !== "object") return JSON.stringify(value);
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    return "{" + Object.keys(value).sort().map(function (k) { return JSON.stringify(k) + ":" + canonical(value[k]); }).join(",") + "}";
  }

  function short(value) {
    var text = JSON.stringify(value);
    return text.length <= 300 ? text : text.slice(0, 299) + "…";
  }

  function cell(tag, text, wrap) {
    var el = document.createElement(tag);
    if (wrap) {
      var inner = document.createElement(wrap);
      inner.textContent = text;
      el.appendChild(inner);
    } else {
      el.textContent = text;
    }
    return el;
  }

  function renderDiff(box, proposed, area) {
    var body = box.querySelector(".diff-body");
    var edited;
    try { edited = JSON.parse(area.value); } catch (e) { body.replaceChildren(cell("p", "Fix the JSON to see your changes.")); return; }
    var changes = [];
    jsonDiff(proposed, edited, "", changes);
    if (!changes.length) {
      body.replaceChildren(cell("p", "No changes: the proposed arguments will be sent as they are."));
      return;
    }
    var table = document.createElement("table");
    table.className = "diff";
    var head = document.createElement("tr");
    ["argument", "proposed", "sent"].forEach(function (t) { var th = cell("th", t); th.scope = "col"; head.appendChild(th); });
    var thead = document.createElement("thead");
    thead.appendChild(head);
    var tbody = document.createElement("tbody");
    changes.forEach(function (c) {
      var tr = document.createElement("tr");
      tr.className = c.kind;
      var th = cell("th", c.path);
      th.scope = "row";
      tr.appendChild(th);
      tr.appendChild(c.kind === "added" ? cell("td", "(not there)") : cell("td", c.old, "del"));
      tr.appendChild(c.kind === "removed" ? cell("td", "(removed)") : cell("td", c.new, "ins"));
      tbody.appendChild(tr);
    });
    table.appendChild(thead);
    table.appendChild(tbody);
    body.replaceChildren(table);
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
    markInvalid(area, message !== "");
    if (error) {
      error.textContent = message;
      error.hidden = message === "";
    }
    return message === "";
  }

  function markInvalid(input, invalid) {
    if (invalid) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }

  function jsonEditors() {
    document.querySelectorAll("textarea[data-json]").forEach(function (area) {
      var box = document.querySelector('[data-diff-for="' + area.id + '"]');
      var proposed = null;
      if (box) {
        try { proposed = JSON.parse(box.getAttribute("data-proposed")); } catch (e) { box = null; }
      }
      var update = function () {
        checkJson(area);
        if (box) renderDiff(box, proposed, area);
      };
      area.addEventListener("input", update);
      if (box) box.hidden = false;
      update();
    });
    document.querySelectorAll("[data-editor-tools]").forEach(function (tools) { tools.hidden = false; });
    document.querySelectorAll("[data-format-json]").forEach(function (button) {
      var area = document.getElementById(button.getAttribute("data-format-json"));
      button.addEventListener("click", function () {
        if (checkJson(area) && area.value.trim() !== "") {
          area.value = JSON.stringify(JSON.parse(area.value), null, 2);
          area.dispatchEvent(new Event("input"));
        }
      });
    });
    document.querySelectorAll("[data-reset-json]").forEach(function (button) {
      var area = document.getElementById(button.getAttribute("data-reset-json"));
      var box = document.querySelector('[data-diff-for="' + area.id + '"]');
      button.addEventListener("click", function () {
        area.value = JSON.stringify(JSON.parse(box.getAttribute("data-proposed")), null, 2);
        area.dispatchEvent(new Event("input"));
      });
    });
    // the diff is on the page: the check step the server offers without JS is not needed
    document.querySelectorAll("button[data-review]").forEach(function (button) { button.removeAttribute("formaction"); });
  }

  // every invalid input is marked (red border, announced) when the browser refuses the form
  function validityMarks() {
    document.addEventListener("invalid", function (event) { markInvalid(event.target, true); }, true);
    document.addEventListener("input", function (event) {
      var input = event.target;
      if (input.matches && input.matches("[aria-invalid]") && !input.matches("[data-json]") && input.checkValidity()) {
        markInvalid(input, false);
      }
    });
  }

  // ---- keyboard ---------------------------------------------------------------------------
  function rowLinks() {
    return Array.prototype.slice.call(document.querySelectorAll("#rows-list .row-link"));
  }

  function move(step) {
    var links = rowLinks();
    if (!links.length) return;
    var current = links.indexOf(document.activeElement);
    var shown = links.findIndex(function (a) { return a.getAttribute("aria-current") === "true"; });
    if (document.body.classList.contains("detail-page")) {
      var next = shown < 0 ? 0 : shown + step;
      if (next >= 0 && next < links.length && next !== shown) window.location.assign(links[next].href);
      return;
    }
    var index = current < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(Math.max(current + step, 0), links.length - 1);
    links[index].focus();
    links[index].scrollIntoView({ block: "nearest" });
  }

  function press(key) {
    var button = document.querySelector('button[data-key="' + key + '"]');
    if (button && !button.closest("[hidden]")) button.click();
    else announce(key === "a" ? "Nothing to approve here." : "Nothing to reject here.");
  }

  function search() {
    var box = document.getElementById("q");
    if (box && box.offsetParent !== null) { box.focus(); box.select(); }
    else window.location.assign("/inbox#search");
  }

  function shortcuts() {
    var dialog = document.getElementById("shortcuts");
    if (dialog && !dialog.open) dialog.showModal();
  }

  function keys(event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && undo.button) { event.preventDefault(); undo.cancel(false); return; }
    var target = event.target;
    if (target.closest && target.closest("input, textarea, select, [contenteditable], dialog")) return;
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": press("a"); break;
      case "r": press("r"); break;
      case "/": search(); break;
      case "?": shortcuts(); break;
      default: return;
    }
    event.preventDefault();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live-url]").forEach(live);
    var form = document.getElementById("answer-form");
    if (form && document.getElementById("undo")) undo.setup(form);
    jsonEditors();
    validityMarks();
    localClocks();
    tickCountdowns();
    setInterval(tickCountdowns, 1000);
    document.addEventListener("keydown", keys);
    document.querySelectorAll("[data-shortcuts]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", shortcuts);
    });
    if (window.location.hash === "#search") search();
    document.documentElement.setAttribute("data-js", "ready");
  });
})();
