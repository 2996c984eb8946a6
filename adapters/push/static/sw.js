// hitl-bridge inbox service worker (scope /inbox/): shows pushed requests as notifications
// and sends a button's decision with the one-use token the message carries (a POST, never a
// GET). Every message of one request has the same tag, so the outcome replaces the question.
"use strict";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

function show(data, extra) {
  const options = {
    body: data.body || "",
    tag: data.tag,
    renotify: Boolean(data.renotify),
    requireInteraction: data.kind === "request",
    icon: "/inbox/push-static/icon-192.png",
    badge: "/inbox/push-static/icon-192.png",
    actions: data.actions || [],
    data: { tap: data.tap || null, url: data.url || "/inbox", tag: data.tag },
    ...extra,
  };
  return self.registration.showNotification(data.title || "hitl-bridge", options);
}

self.addEventListener("push", (event) => {
  let data = null;
  try {
    data = event.data ? event.data.json() : null;
  } catch (e) {
    data = null;
  }
  if (!data || data.v !== 1 || typeof data.tag !== "string") {
    return;
  }
  event.waitUntil(show(data, {}));
});

async function decide(notification, decision) {
  const d = notification.data || {};
  let text = "";
  try {
    const response = await fetch(d.tap, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ decision }),
      credentials: "omit",
    });
    const reply = await response.json().catch(() => ({}));
    if (response.ok) {
      text = reply.state === "voted" ? "Vote recorded; waiting for more approvals."
        : (decision === "approve" ? "Approved." : "Rejected.");
    } else {
      text = reply.error || `Not recorded (${response.status}).`;
    }
  } catch (e) {
    text = "Not recorded: the bridge could not be reached. Open the inbox to answer.";
  }
  await show({ kind: "result", tag: d.tag, title: notification.title, body: text, url: d.url, actions: [] }, {});
  const all = await self.clients.matchAll({ includeUncontrolled: true });
  for (const client of all) {
    client.postMessage({ type: "hitl-decided", decision, text });
  }
}

self.addEventListener("notificationclick", (event) => {
  const notification = event.notification;
  const d = notification.data || {};
  notification.close();
  if ((event.action === "approve" || event.action === "reject") && d.tap) {
    event.waitUntil(decide(notification, event.action));
    return;
  }
  event.waitUntil(self.clients.openWindow(d.url || "/inbox"));
});
