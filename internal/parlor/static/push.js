// Notifications in this browser (Settings): registers the service worker
// at /sw.js, asks the browser for a Web Push subscription with the
// platform's VAPID key, and sends it in the form's hidden fields.
(function () {
  var form = document.getElementById("push-form");
  if (!form) return;
  var status = document.getElementById("push-status");
  var button = form.querySelector("button");
  function say(text) { if (status) status.textContent = text; }
  function keyBytes(s) {
    var b64 = s.replace(/-/g, "+").replace(/_/g, "/");
    while (b64.length % 4) b64 += "=";
    var raw = atob(b64), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }
  // submit sends a PushSubscription (or its JSON) to parlor.
  function submit(sub) {
    var json = typeof sub.toJSON === "function" ? sub.toJSON() : sub;
    form.elements.endpoint.value = json.endpoint;
    form.elements.p256dh.value = json.keys.p256dh;
    form.elements.auth.value = json.keys.auth;
    form.submit();
  }
  window.parlorPush = { submit: submit };
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    say("This browser cannot receive notifications.");
    button.disabled = true;
    return;
  }
  window.parlorPush.ready = navigator.serviceWorker.register("/sw.js").then(function () {
    return navigator.serviceWorker.ready;
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    say("Asking the browser for a subscription…");
    window.parlorPush.ready.then(function (registration) {
      return Notification.requestPermission().then(function (permission) {
        if (permission !== "granted") throw new Error("notifications are blocked for this site");
        return registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: keyBytes(form.getAttribute("data-vapid-key"))
        });
      });
    }).then(submit, function (err) {
      say("The browser did not subscribe: " + err.message + ".");
    });
  });
})();
