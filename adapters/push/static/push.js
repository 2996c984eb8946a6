// The notifications page: register the service worker, subscribe this browser with the
// daemon's VAPID key, and send the subscription to the bridge.
"use strict";

function keyBytes(base64url) {
  const padded = (base64url + "===".slice((base64url.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(padded);
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

async function turnOn(button, status) {
  status.textContent = "Asking this browser…";
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    status.textContent = "This browser cannot receive push notifications. On an iPhone, add the inbox to the Home Screen first.";
    return;
  }
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    status.textContent = "Notifications are blocked for this site: allow them in the browser's site settings.";
    return;
  }
  const registration = await navigator.serviceWorker.register("/inbox/sw.js", { scope: "/inbox/" });
  await navigator.serviceWorker.ready;
  const subscription = await registration.pushManager.subscribe({
    userVisibleOnly: true,
    applicationServerKey: keyBytes(button.dataset.key),
  });
  const response = await fetch("/inbox/push/devices", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": button.dataset.csrf },
    body: JSON.stringify(subscription.toJSON()),
    credentials: "same-origin",
  });
  const reply = await response.json().catch(() => ({}));
  if (response.ok) {
    status.textContent = "Notifications are on for this device.";
    document.body.dataset.pushDevice = reply.device || "";
    setTimeout(() => window.location.reload(), 800);
  } else {
    status.textContent = reply.error || `The bridge refused (${response.status}).`;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const button = document.querySelector("[data-push-on]");
  const status = document.getElementById("push-status");
  if (!button || !status) {
    return;
  }
  button.hidden = false;
  button.addEventListener("click", () => {
    turnOn(button, status).catch((e) => {
      status.textContent = `Could not turn notifications on: ${e.message}`;
    });
  });
});
