// The platform's service worker (served at /sw.js): shows each Web Push
// notification courier sends, and opens its link when it is clicked.
self.addEventListener("push", function (event) {
  var data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (e) {
    data = { title: event.data.text() };
  }
  event.waitUntil(self.registration.showNotification(data.title || "Platform", {
    body: data.body || "",
    tag: data.id,
    data: { link: data.link || "/app" }
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var link = (event.notification.data && event.notification.data.link) || "/app";
  event.waitUntil(self.clients.openWindow(link));
});
