// Enrol this device for Web Push: register the service worker, subscribe with the queue's VAPID key, send it.
(function () {
  const button = document.getElementById("enrol");
  const status = document.getElementById("enrol-status");
  if (!button) return;
  const bytes = (b64) => Uint8Array.from(atob(b64.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  button.addEventListener("click", async () => {
    try {
      const reg = await navigator.serviceWorker.register("/sw.js");
      await navigator.serviceWorker.ready;
      const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(document.body.dataset.vapid) });
      const r = await fetch("/subscribe", { method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": document.body.dataset.csrf }, body: JSON.stringify(sub) });
      status.textContent = r.ok ? "This phone will be notified." : "Enrolment refused (" + r.status + ").";
    } catch (e) {
      status.textContent = "This browser cannot receive push here: " + e;
    }
  });
})();
// The task list follows the queue without a reload: when the set of open tasks changes, the page reloads.
(function () {
  if (!document.body.dataset.vapid) return;
  const ids = (root) => Array.from(root.querySelectorAll("section.task")).map((s) => s.dataset.task).join(" ");
  const shown = ids(document);
  setInterval(async () => {
    const r = await fetch("/", { credentials: "same-origin" });
    if (!r.ok) return;
    const page = new DOMParser().parseFromString(await r.text(), "text/html");
    if (ids(page) !== shown) location.reload();
  }, 5000);
})();
