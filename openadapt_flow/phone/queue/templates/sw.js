// The phone page's service worker: each Web Push (the closed context, decrypted by the browser) becomes a notification.
self.addEventListener("push", (event) => {
  let ctx = {};
  try { ctx = event.data ? event.data.json() : {}; } catch (e) { ctx = {}; }
  const title = `${ctx.bundle || "flow"}: step ${ctx.step || "?"} is waiting`;
  const body = `${ctx.intent || ""} (${ctx.category || "paused"}) — ${(ctx.allowed || []).join(", ")}`;
  event.waitUntil(self.registration.showNotification(title, { body, tag: ctx.idempotency_scope || "flow", data: { url: "/" } }));
});
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.clients.openWindow("/"));
});
