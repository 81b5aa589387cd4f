package parlor

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Web Push in Settings (courier.md section 6): the browser subscribes
// through the service worker at /sw.js and static/push.js, and the page
// lists the user's devices. With push off (courier has no VAPID pair) the
// section is not shown.

// PushSubscription is one of the user's subscribed browsers.
type PushSubscription struct {
	ID        string    `json:"id"`
	Endpoint  string    `json:"endpoint"`
	Device    string    `json:"device"`
	CreatedAt time.Time `json:"created_at"`
}

// pushDevices is Settings' devices section.
type pushDevices struct {
	VAPIDKey string
	Devices  []PushSubscription
}

// VAPIDPublicKey returns the key browsers subscribe with.
func (c *Client) VAPIDPublicKey(ctx context.Context) (string, error) {
	var out struct {
		PublicKey string `json:"public_key"`
	}
	err := c.do(ctx, "", "GET", "/v1/push/vapid_public_key", nil, &out)
	return out.PublicKey, err
}

// PushSubscriptions lists the user's subscribed browsers.
func (c *Client) PushSubscriptions(ctx context.Context, token string) ([]PushSubscription, error) {
	var out struct {
		Subs []PushSubscription `json:"push_subscriptions"`
	}
	err := c.do(ctx, token, "GET", "/v1/me/push_subscriptions", nil, &out)
	return out.Subs, err
}

// SubscribePush records a browser's subscription; the request carries
// the browser's User-Agent (withUserAgent), which names the device.
func (c *Client) SubscribePush(ctx context.Context, token, endpoint, p256dh, auth string) (PushSubscription, error) {
	var out struct {
		Sub PushSubscription `json:"push_subscription"`
	}
	body := map[string]any{"endpoint": endpoint, "keys": map[string]string{"p256dh": p256dh, "auth": auth}}
	err := c.do(ctx, token, "POST", "/v1/me/push_subscriptions", body, &out)
	return out.Sub, err
}

// DeletePushSubscription removes one of the user's devices.
func (c *Client) DeletePushSubscription(ctx context.Context, token, id string) error {
	return c.do(ctx, token, "DELETE", "/v1/me/push_subscriptions/"+url.PathEscape(id), nil, nil)
}

type userAgentKey struct{}

// withUserAgent has the platform API requests made with ctx carry ua.
func withUserAgent(ctx context.Context, ua string) context.Context {
	return context.WithValue(ctx, userAgentKey{}, ua)
}

// pushSection reads the devices section: nil when push is off.
func (s *server) pushSection(ctx context.Context, token string) (*pushDevices, error) {
	key, err := s.api.VAPIDPublicKey(ctx)
	if StatusOf(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	devices, err := s.api.PushSubscriptions(ctx, token)
	if err != nil {
		return nil, err
	}
	return &pushDevices{VAPIDKey: key, Devices: devices}, nil
}

// subscribePush records the subscription push.js put in the form.
func (s *server) subscribePush(w http.ResponseWriter, r *http.Request, sess *session) {
	endpoint := strings.TrimSpace(r.PostFormValue("endpoint"))
	p256dh, auth := r.PostFormValue("p256dh"), r.PostFormValue("auth")
	p := &page{Title: "Settings", User: &sess.Me}
	if endpoint == "" || p256dh == "" || auth == "" {
		p.Error = "Your browser sent no subscription: notifications need JavaScript and a browser that supports them."
		s.renderSettings(w, r, http.StatusUnprocessableEntity, sess, p)
		return
	}
	if _, err := s.api.SubscribePush(withUserAgent(r.Context(), r.UserAgent()), sess.Token, endpoint, p256dh, auth); err != nil {
		status := formFailure(p, err)
		if status == http.StatusUnprocessableEntity {
			p.Errors = nil
			p.Error = "Your browser's subscription was refused: its push service is not one notifications can be sent to."
		}
		s.renderSettings(w, r, status, sess, p)
		return
	}
	http.Redirect(w, r, "/app/settings?done=push", http.StatusSeeOther)
}

func (s *server) deletePush(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.DeletePushSubscription(r.Context(), sess.Token, r.PathValue("sub")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/app/settings?done=push-removed", http.StatusSeeOther)
}

// serviceWorker serves static/sw.js at /sw.js, so its scope is the whole
// site.
func (s *server) serviceWorker(w http.ResponseWriter, r *http.Request) {
	b, err := staticFS.ReadFile("static/sw.js")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
