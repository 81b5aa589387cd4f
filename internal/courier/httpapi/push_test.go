package httpapi_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// testVAPIDKey is the public key the handler hands out; push's own tests
// use real pairs.
const testVAPIDKey = "BOr4ETyJ9rErzlCiZl0cpzW_OC1K8jcK5xC3p7I8YHpE7aR3f1pQw4RsSGkqaOc2aLkDk0n6o2b1uHgQZfqR6Bo"

func withPush(store *sqlstore.Store, sealer *seal.Sealer) *courier.Push {
	return courier.NewPush(store, sealer, false, nil)
}

// browserKeys are a subscription's keys as a browser makes them: a P-256
// point and 16 random bytes, base64url.
func browserKeys(t *testing.T) (p256dh, auth string) {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	return base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(secret)
}

func subscriptionBody(endpoint, p256dh, auth string) string {
	return `{"endpoint":"` + endpoint + `","expirationTime":null,"keys":{"p256dh":"` + p256dh + `","auth":"` + auth + `"}}`
}

func TestPushRoutes(t *testing.T) {
	cov := coverage
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnvPush(t, engine, 0, true, withPush)
		c := openapitest.NewClient(t, httpapi.OpenAPI(), e.handler, cov)
		tok := e.idp.user(t, "Pia@Example.com")
		me := openapitest.Bearer(tok)
		svc := openapitest.Bearer(identityToken)

		var key struct {
			PublicKey string `json:"public_key"`
		}
		c.JSON("GET", "/v1/push/vapid_public_key", "", 200, &key)
		if key.PublicKey != testVAPIDKey {
			t.Errorf("public_key = %q", key.PublicKey)
		}

		p256dh, auth := browserKeys(t)
		// A literal public address: the endpoint's host needs no resolver.
		endpoint := "https://93.184.215.14/push/v1/abc"
		var created struct {
			Sub struct{ ID, Endpoint, Device string } `json:"push_subscription"`
		}
		c.JSON("POST", "/v1/me/push_subscriptions", subscriptionBody(endpoint, p256dh, auth), 201, &created, me,
			openapitest.Header("User-Agent", "Mozilla/5.0 HeadlessChrome"))
		if created.Sub.Endpoint != endpoint || created.Sub.Device != "Mozilla/5.0 HeadlessChrome" {
			t.Errorf("created %+v", created.Sub)
		}
		// The same browser again (standard base64 with padding, as some
		// libraries send) replaces its keys: still one subscription.
		std := base64.StdEncoding.EncodeToString(mustDecode(t, p256dh))
		c.Do("POST", "/v1/me/push_subscriptions", subscriptionBody(endpoint, std, auth), 201, me)
		var list struct {
			Subs []struct{ ID string } `json:"push_subscriptions"`
		}
		c.JSON("GET", "/v1/me/push_subscriptions", "", 200, &list, me)
		if len(list.Subs) != 1 || list.Subs[0].ID != created.Sub.ID {
			t.Errorf("list = %+v, want the one subscription", list.Subs)
		}

		// A welcome to the subscriber's address is pushed; its pushes are
		// listed with the email's history.
		var sent struct {
			Email struct{ ID string } `json:"email"`
		}
		c.JSON("POST", "/v1/emails", `{"template":"welcome","to":"pia@example.com","data":{}}`, 202, &sent, svc)
		var pushes struct {
			Pushes []struct {
				Status  string
				History []struct{ Status string }
			} `json:"pushes"`
		}
		c.JSON("GET", "/v1/emails/"+sent.Email.ID+"/pushes", "", 200, &pushes, svc)
		if len(pushes.Pushes) != 1 || pushes.Pushes[0].Status != courier.PushQueued || len(pushes.Pushes[0].History) != 1 {
			t.Errorf("pushes = %+v, want one queued", pushes.Pushes)
		}
		c.JSON("POST", "/v1/emails", verifyBody, 202, &sent, svc)
		c.JSON("GET", "/v1/emails/"+sent.Email.ID+"/pushes", "", 200, &pushes, svc)
		if len(pushes.Pushes) != 0 {
			t.Errorf("a security message was pushed: %+v", pushes.Pushes)
		}
		c.Code("GET", "/v1/emails/"+sent.Email.ID+"/pushes", "", 401, "unauthorized", me)
		c.Code("GET", "/v1/emails/5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c/pushes", "", 404, "not_found", svc)

		bad := make([]byte, 65)
		bad[0] = 4
		for _, tt := range []struct{ name, body, field, rule string }{
			{"PlainHTTP", subscriptionBody("http://93.184.215.14/push", p256dh, auth), "endpoint", "https_required"},
			{"NotAURL", subscriptionBody("push", p256dh, auth), "endpoint", "invalid"},
			{"Missing", `{"keys":{"p256dh":"` + p256dh + `","auth":"` + auth + `"}}`, "endpoint", "required"},
			{"PrivateAddress", subscriptionBody("https://10.1.2.3/push", p256dh, auth), "endpoint", "private_address"},
			{"MetadataAddress", subscriptionBody("https://169.254.169.254/push", p256dh, auth), "endpoint", "private_address"},
			{"Loopback", subscriptionBody("https://[::1]:8443/push", p256dh, auth), "endpoint", "private_address"},
			{"ResolvesToLoopback", subscriptionBody("https://localhost/push", p256dh, auth), "endpoint", "private_address"},
			{"Credentials", subscriptionBody("https://u:p@93.184.215.14/push", p256dh, auth), "endpoint", "invalid"},
			{"NotOnTheCurve", subscriptionBody(endpoint, base64.RawURLEncoding.EncodeToString(bad), auth), "keys.p256dh", "invalid"},
			{"CompressedPoint", subscriptionBody(endpoint, base64.RawURLEncoding.EncodeToString(mustDecode(t, p256dh)[:33]), auth), "keys.p256dh", "invalid"},
			{"NotBase64", subscriptionBody(endpoint, "!!", auth), "keys.p256dh", "invalid"},
			{"ShortAuth", subscriptionBody(endpoint, p256dh, base64.RawURLEncoding.EncodeToString(make([]byte, 15))), "keys.auth", "invalid"},
			{"LongAuth", subscriptionBody(endpoint, p256dh, base64.RawURLEncoding.EncodeToString(make([]byte, 32))), "keys.auth", "invalid"},
			{"AuthNotBase64", subscriptionBody(endpoint, p256dh, "not*base64*at*all!"), "keys.auth", "invalid"},
			{"NoAuth", subscriptionBody(endpoint, p256dh, ""), "keys.auth", "required"},
			{"NoKeys", `{"endpoint":"` + endpoint + `"}`, "keys.p256dh", "required"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				w := c.Code("POST", "/v1/me/push_subscriptions", tt.body, 422, "validation_failed", me)
				if want := `{"field":"` + tt.field + `","code":"` + tt.rule + `"}`; !strings.Contains(strings.ReplaceAll(w.Body.String(), " ", ""), want) {
					t.Errorf("422 body %s lacks %s", w.Body, want)
				}
			})
		}
		c.Code("POST", "/v1/me/push_subscriptions", `{"endpoint":1}`, 400, "malformed_json", me)
		c.Code("POST", "/v1/me/push_subscriptions", "x", 415, "unsupported_media_type", me, openapitest.Header("Content-Type", "text/plain"))
		c.Code("POST", "/v1/me/push_subscriptions", `{"endpoint":"`+strings.Repeat("a", 1<<20)+`"}`, 413, "body_too_large", me)
		c.Code("POST", "/v1/me/push_subscriptions", subscriptionBody(endpoint, p256dh, auth), 401, "unauthorized")
		c.Code("GET", "/v1/me/push_subscriptions", "", 401, "unauthorized")
		c.Code("DELETE", "/v1/me/push_subscriptions/"+created.Sub.ID, "", 401, "unauthorized")

		other := openapitest.Bearer(e.idp.user(t, "quin@example.com"))
		c.Code("DELETE", "/v1/me/push_subscriptions/"+created.Sub.ID, "", 404, "not_found", other)
		c.Code("DELETE", "/v1/me/push_subscriptions/not-a-uuid", "", 404, "not_found", me)
		c.Do("DELETE", "/v1/me/push_subscriptions/"+created.Sub.ID, "", 204, me)
		c.JSON("GET", "/v1/me/push_subscriptions", "", 200, &list, me)
		if len(list.Subs) != 0 {
			t.Errorf("after DELETE: %+v", list.Subs)
		}
		if n := e.count(`SELECT count(*) FROM push_sends WHERE status = 'failed'`); n != 1 {
			t.Errorf("the deleted subscription's queued push: %d failed, want 1", n)
		}

		e.idp.srv.Close()
		c.Code("GET", "/v1/me/push_subscriptions", "", 503, "unavailable", me)
		c.Code("POST", "/v1/me/push_subscriptions", subscriptionBody(endpoint, p256dh, auth), 503, "unavailable", me)
		c.Code("DELETE", "/v1/me/push_subscriptions/"+created.Sub.ID, "", 503, "unavailable", me)
	})
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPushOffIs404: without a VAPID pair every push route is 404 and the
// rest answers as before.
func TestPushOffIs404(t *testing.T) {
	cov := coverage
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		c := openapitest.NewClient(t, httpapi.OpenAPI(), e.handler, cov)
		me := openapitest.Bearer(e.idp.user(t, "off@example.com"))
		svc := openapitest.Bearer(identityToken)
		c.Code("GET", "/v1/push/vapid_public_key", "", 404, "not_found")
		c.Code("GET", "/v1/me/push_subscriptions", "", 404, "not_found", me)
		p256dh, auth := browserKeys(t)
		c.Code("POST", "/v1/me/push_subscriptions", subscriptionBody("https://93.184.215.14/p", p256dh, auth), 404, "not_found", me)
		c.Code("DELETE", "/v1/me/push_subscriptions/5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c", "", 404, "not_found", me)
		// A subscription made while push was on queues nothing now:
		// nothing would send it. The email itself is queued as ever.
		_, err := sqlstore.New(e.db).SubscribePush(context.Background(), "off@example.com", courier.PushSubscription{
			ID: uuid.NewString(), UserID: uuid.NewString(), Endpoint: "https://93.184.215.14/p", P256dh: p256dh}, []byte("sealed"))
		if err != nil {
			t.Fatal(err)
		}
		var sent struct {
			Email struct{ ID, Status string } `json:"email"`
		}
		c.JSON("POST", "/v1/emails", `{"template":"welcome","to":"off@example.com","data":{}}`, 202, &sent, svc)
		if sent.Email.Status != courier.StatusQueued {
			t.Errorf("the email is %s, want queued", sent.Email.Status)
		}
		if n := e.count(`SELECT count(*) FROM push_sends`); n != 0 {
			t.Errorf("push off queued %d pushes", n)
		}
		c.Code("GET", "/v1/emails/"+sent.Email.ID+"/pushes", "", 404, "not_found", svc)
		c.Do("GET", "/v1/emails/"+sent.Email.ID, "", 200, svc)
		c.Do("GET", "/v1/me/preferences", "", 200, me)

		slow := newEnvPush(t, engine, time.Nanosecond, true, withPush)
		sc := openapitest.NewClient(t, httpapi.OpenAPI(), slow.handler, cov)
		sc.Code("GET", "/v1/emails/5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c/pushes", "", 503, "unavailable", svc)
	})
}
