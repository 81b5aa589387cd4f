package push_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/push"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/courier/webhooks"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

const subject = "mailto:push@platform.example"

// browser is a subscribing browser: its P-256 key pair and auth secret,
// made as a user agent makes them.
type browser struct {
	key  *ecdh.PrivateKey
	auth []byte
}

func newBrowser(t *testing.T) browser {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return browser{key: k, auth: auth}
}

// decrypt opens an aes128gcm body (RFC 8188) encrypted for the browser
// per RFC 8291.
func (b browser) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("short header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("keyid of %d bytes, want the sender's 65-byte public key", idlen)
	}
	asPublic := body[21 : 21+idlen]
	ciphertext := body[21+idlen:]
	if uint32(len(ciphertext)) > rs {
		return nil, fmt.Errorf("more than one record (%d > rs %d)", len(ciphertext), rs)
	}
	peer, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		return nil, err
	}
	shared, err := b.key.ECDH(peer)
	if err != nil {
		return nil, err
	}
	keyInfo := append(append([]byte("WebPush: info\x00"), b.key.PublicKey().Bytes()...), asPublic...)
	prkKey, err := hkdf.Extract(sha256.New, shared, b.auth)
	if err != nil {
		return nil, err
	}
	ikm, err := hkdf.Expand(sha256.New, prkKey, string(keyInfo), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, err
	}
	// Padding: the last record ends with 0x02 then zeros.
	end := len(plain) - 1
	for end >= 0 && plain[end] == 0 {
		end--
	}
	if end < 0 || plain[end] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:end], nil
}

// pushService is a push service written for the tests: it verifies each
// request's VAPID token against the application server's public key,
// decrypts the payload with the subscription's browser, and answers each
// subscription with the statuses it was told to (the last one repeats).
type pushService struct {
	t        *testing.T
	srv      *httptest.Server
	vapid    push.VAPID
	mu       sync.Mutex
	browsers map[string]browser
	answers  map[string][]int
	got      map[string][]push.Payload
	problems []string
}

func newPushService(t *testing.T, vapid push.VAPID) *pushService {
	p := &pushService{t: t, vapid: vapid, browsers: map[string]browser{}, answers: map[string][]int{}, got: map[string][]push.Payload{}}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pushService) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *pushService) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/wpush/")
	b, known := p.browsers[name]
	if !known {
		http.NotFound(w, r)
		return
	}
	if err := p.verifyVAPID(r); err != nil {
		p.problem("%s: VAPID: %v", name, err)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" || r.Header.Get("TTL") == "" {
		p.problem("%s: headers %v", name, r.Header)
	}
	body, _ := io.ReadAll(r.Body)
	plain, err := b.decrypt(body)
	if err != nil {
		p.problem("%s: decrypt: %v", name, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var payload push.Payload
	if err := json.Unmarshal(plain, &payload); err != nil {
		p.problem("%s: payload %q: %v", name, plain, err)
	}
	p.got[name] = append(p.got[name], payload)
	status := http.StatusCreated
	if a := p.answers[name]; len(a) > 0 {
		status = a[0]
		if len(a) > 1 {
			p.answers[name] = a[1:]
		}
	}
	w.WriteHeader(status)
}

// verifyVAPID checks `Authorization: vapid t=<jwt>, k=<key>` (RFC 8292):
// k is the application server's key, and the token is an ES256 JWT signed
// by it for this push service's origin, with the subject and an
// expiry within 24 hours.
func (p *pushService) verifyVAPID(r *http.Request) error {
	h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "vapid ")
	if !ok {
		return errors.New("no vapid authorization")
	}
	var tok, k string
	for part := range strings.SplitSeq(h, ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "t="); ok {
			tok = v
		}
		if v, ok := strings.CutPrefix(part, "k="); ok {
			k = v
		}
	}
	if k != p.vapid.PublicKey {
		return fmt.Errorf("k = %q, not the configured public key", k)
	}
	raw, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil || len(raw) != 65 {
		return fmt.Errorf("k does not decode to a point")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return fmt.Errorf("k is not a P-256 point: %w", err)
	}
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithExpirationRequired(), jwt.WithAudience("https://"+r.Host))
	if err != nil {
		return err
	}
	if claims["sub"] != subject {
		return fmt.Errorf("sub = %v, want %s", claims["sub"], subject)
	}
	exp, _ := claims.GetExpirationTime()
	if exp == nil || time.Until(exp.Time) > 24*time.Hour {
		return fmt.Errorf("exp %v is more than 24 hours away", exp)
	}
	return nil
}

// add registers a browser at the service; answers are its statuses.
func (p *pushService) add(name string, b browser, answers ...int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.browsers[name], p.answers[name] = b, answers
	return p.srv.URL + "/wpush/" + name
}

func (p *pushService) received(name string) []push.Payload {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]push.Payload(nil), p.got[name]...)
}

type env struct {
	store  *sqlstore.Store
	svc    *courier.Service
	pm     *courier.Push
	sender *push.Sender
	ps     *pushService
}

func newEnv(t *testing.T, engine sqldb.Engine, schedule []time.Duration) *env {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	sealer, err := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := courier.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	vapid, err := push.GenerateVAPID(subject)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := push.ParseVAPID(vapid.PublicKey, vapid.PrivateKey, vapid.Subject); err != nil {
		t.Fatalf("a generated pair does not parse: %v", err)
	}
	ps := newPushService(t, vapid)
	roots := x509.NewCertPool()
	roots.AddCert(ps.srv.Certificate())
	store := sqlstore.New(db)
	svc := courier.NewService(store, sealer)
	svc.EnablePush(nil)
	// Development admits the loopback push service, as courier.md allows
	// for tests; the client trusts the test server's certificate only.
	pm := courier.NewPush(store, sealer, true, nil)
	client := webhooks.NewClientWith(webhooks.ClientOptions{Development: true, RootCAs: roots})
	sender := push.NewSender(store, svc, pm, renderer, vapid, client, push.Options{Schedule: schedule}, slog.New(slog.DiscardHandler))
	return &env{store: store, svc: svc, pm: pm, sender: sender, ps: ps}
}

func (e *env) subscribe(t *testing.T, u courier.User, name string, answers ...int) browser {
	t.Helper()
	b := newBrowser(t)
	endpoint := e.ps.add(name, b, answers...)
	_, err := e.pm.Subscribe(context.Background(), u, courier.SubscriptionInput{Endpoint: endpoint,
		P256dh: base64.RawURLEncoding.EncodeToString(b.key.PublicKey().Bytes()), Auth: base64.RawURLEncoding.EncodeToString(b.auth)})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return b
}

// settle runs the loop until every push of the email is final.
func (e *env) settle(t *testing.T, emailID string) []courier.PushSend {
	t.Helper()
	var pushes []courier.PushSend
	testutil.Eventually(t, 20*time.Second, "the pushes to settle", func() bool {
		if _, err := e.sender.SendDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		var err error
		pushes, err = e.pm.Pushes(context.Background(), emailID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pushes {
			if p.Status == courier.PushQueued {
				return false
			}
		}
		return true
	})
	return pushes
}

func statuses(p courier.PushSend) []string {
	var out []string
	for _, h := range p.History {
		out = append(out, h.Status)
	}
	return out
}

var fast = []time.Duration{time.Millisecond, time.Millisecond}

func TestPushDelivery(t *testing.T) {
	ctx := context.Background()
	invite := map[string]any{"link": "https://app.example.com/invite?token=abc", "account_name": "Acme", "inviter_email": "boss@example.com"}
	tests := []struct {
		name     string
		template string
		data     map[string]any
		answers  []int
		// want is the push's status, history and the payloads the
		// service decrypted (short: title and link only).
		want     string
		history  []string
		requests int
		// attempts is the push's count: a 413's shortened resend is
		// part of the same attempt.
		attempts int
		short    []bool
		gone     bool
	}{
		{name: "Delivered", template: courier.TemplateWelcome, answers: []int{201}, want: courier.PushDelivered,
			history: []string{"queued", "delivered"}, requests: 1, attempts: 1, short: []bool{false}},
		{name: "LinkCarried", template: courier.TemplateInvitation, data: invite, answers: []int{201}, want: courier.PushDelivered,
			history: []string{"queued", "delivered"}, requests: 1, attempts: 1, short: []bool{false}},
		{name: "GoneDeletesTheSubscription", template: courier.TemplateWelcome, answers: []int{410}, want: courier.PushExpired,
			history: []string{"queued", "expired"}, requests: 1, attempts: 1, short: []bool{false}, gone: true},
		{name: "NotFoundDeletesTheSubscription", template: courier.TemplateWelcome, answers: []int{404}, want: courier.PushExpired,
			history: []string{"queued", "expired"}, requests: 1, attempts: 1, short: []bool{false}, gone: true},
		{name: "TooManyRequestsAnd5xxRetried", template: courier.TemplateWelcome, answers: []int{429, 503, 201}, want: courier.PushDelivered,
			history: []string{"queued", "queued", "queued", "delivered"}, requests: 3, attempts: 3, short: []bool{false, false, false}},
		{name: "RetriesEndFailed", template: courier.TemplateWelcome, answers: []int{500}, want: courier.PushFailed,
			history: []string{"queued", "queued", "queued", "failed"}, requests: 3, attempts: 3, short: []bool{false, false, false}},
		{name: "TooLargeShortenedOnce", template: courier.TemplateInvitation, data: invite, answers: []int{413, 201}, want: courier.PushDelivered,
			history: []string{"queued", "delivered"}, requests: 2, attempts: 1, short: []bool{false, true}},
		{name: "TooLargeTwiceFails", template: courier.TemplateInvitation, data: invite, answers: []int{413}, want: courier.PushFailed,
			history: []string{"queued", "failed"}, requests: 2, attempts: 1, short: []bool{false, true}},
		{name: "RefusedIsFinal", template: courier.TemplateWelcome, answers: []int{400}, want: courier.PushFailed,
			history: []string{"queued", "failed"}, requests: 1, attempts: 1, short: []bool{false}},
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := newEnv(t, engine, fast)
				u := courier.User{ID: uuid.NewString(), Email: "reader@example.com"}
				e.subscribe(t, u, "b1", tt.answers...)
				data := tt.data
				if data == nil {
					data = map[string]any{}
				}
				sent, err := e.svc.Send(ctx, "identity", courier.SendRequest{Template: tt.template, To: u.Email, Data: data})
				if err != nil || sent.Pushes != 1 {
					t.Fatalf("Send = %d pushes, %v", sent.Pushes, err)
				}
				pushes := e.settle(t, sent.ID)
				if len(pushes) != 1 || pushes[0].Status != tt.want || !slices.Equal(statuses(pushes[0]), tt.history) {
					t.Fatalf("push = %+v, want %s with history %v", pushes, tt.want, tt.history)
				}
				if pushes[0].Attempts != tt.attempts {
					t.Errorf("attempts = %d, want %d", pushes[0].Attempts, tt.attempts)
				}
				got := e.ps.received("b1")
				if len(got) != tt.requests {
					t.Fatalf("the push service decrypted %d payloads, want %d", len(got), tt.requests)
				}
				for i, p := range got {
					if p.ID != pushes[0].ID || p.Template != tt.template || p.Title == "" {
						t.Errorf("payload %d = %+v", i, p)
					}
					if short := p.Body == ""; short != tt.short[i] {
						t.Errorf("payload %d short = %v, want %v: %+v", i, short, tt.short[i], p)
					}
					if link, _ := data["link"].(string); p.Link != link {
						t.Errorf("payload %d link = %q, want %q", i, p.Link, link)
					}
				}
				subs, _ := e.pm.Subscriptions(ctx, u)
				if gone := len(subs) == 0; gone != tt.gone {
					t.Errorf("subscription gone = %v, want %v", gone, tt.gone)
				}
				e.ps.mu.Lock()
				defer e.ps.mu.Unlock()
				for _, p := range e.ps.problems {
					t.Error(p)
				}
			})
		}
		t.Run("NeverPushed", func(t *testing.T) {
			e := newEnv(t, engine, fast)
			u := courier.User{ID: uuid.NewString(), Email: "quiet@example.com"}
			e.subscribe(t, u, "b2")
			sec, err := e.svc.Send(ctx, "identity", courier.SendRequest{Template: courier.TemplatePasswordReset, To: u.Email,
				Data: map[string]any{"link": "https://app.example.com/reset?token=secret"}})
			if err != nil || sec.Pushes != 0 {
				t.Fatalf("a security message queued %d pushes (%v)", sec.Pushes, err)
			}
			off := false
			if _, err := e.svc.UpdatePreferences(ctx, u, courier.PreferencesPatch{AccountActivity: &off}); err != nil {
				t.Fatal(err)
			}
			muted, err := e.svc.Send(ctx, "identity", courier.SendRequest{Template: courier.TemplateWelcome, To: u.Email, Data: map[string]any{}})
			if err != nil || muted.Pushes != 0 {
				t.Fatalf("a category turned off queued %d pushes (%v)", muted.Pushes, err)
			}
			if n, err := e.sender.SendDue(ctx); err != nil || n != 0 {
				t.Errorf("SendDue claimed %d (%v), want nothing", n, err)
			}
			if got := e.ps.received("b2"); len(got) != 0 {
				t.Errorf("the push service received %d", len(got))
			}
		})
		t.Run("EverySubscriptionOfTheUser", func(t *testing.T) {
			e := newEnv(t, engine, fast)
			u := courier.User{ID: uuid.NewString(), Email: "many@example.com"}
			e.subscribe(t, u, "laptop")
			e.subscribe(t, u, "phone")
			sent, err := e.svc.Send(ctx, "identity", courier.SendRequest{Template: courier.TemplateWelcome, To: u.Email, Data: map[string]any{}})
			if err != nil || sent.Pushes != 2 {
				t.Fatalf("Send = %d pushes, %v", sent.Pushes, err)
			}
			e.settle(t, sent.ID)
			if len(e.ps.received("laptop")) != 1 || len(e.ps.received("phone")) != 1 {
				t.Errorf("laptop got %d, phone %d; want one each", len(e.ps.received("laptop")), len(e.ps.received("phone")))
			}
		})
	})
}

// TestPushRetryWaitsForItsSchedule: a 503 leaves the push queued with
// its next attempt at the schedule's first delay, as a webhook's is; the
// loop does not claim it before then.
func TestPushRetryWaitsForItsSchedule(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, []time.Duration{time.Hour})
		u := courier.User{ID: uuid.NewString(), Email: "later@example.com"}
		e.subscribe(t, u, "b4", http.StatusServiceUnavailable, http.StatusCreated)
		sent, err := e.svc.Send(ctx, "identity", courier.SendRequest{Template: courier.TemplateWelcome, To: u.Email, Data: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := e.sender.SendDue(ctx); err != nil || n != 1 {
			t.Fatalf("SendDue = %d, %v; want the one push", n, err)
		}
		pushes, err := e.pm.Pushes(ctx, sent.ID)
		if err != nil || len(pushes) != 1 {
			t.Fatalf("Pushes = %+v, %v", pushes, err)
		}
		p := pushes[0]
		last := p.History[len(p.History)-1]
		if p.Status != courier.PushQueued || p.Attempts != 1 || !slices.Equal(statuses(p), []string{"queued", "queued"}) ||
			!strings.Contains(last.Detail, "503") {
			t.Fatalf("after a 503: %+v, want queued again after one attempt with the answer in its history", p)
		}
		if n, err := e.sender.SendDue(ctx); err != nil || n != 0 {
			t.Errorf("SendDue claimed %d (%v) an hour early", n, err)
		}
		if got := e.ps.received("b4"); len(got) != 1 {
			t.Errorf("the push service received %d, want the one attempt", len(got))
		}
	})
}

func TestPushToAGuardedAddressIsRetriedNotSent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, fast)
		u := courier.User{ID: uuid.NewString(), Email: "guard@example.com"}
		e.subscribe(t, u, "b3")
		// Outside development the client refuses the loopback push service
		// at connect time.
		vapid, _ := push.GenerateVAPID(subject)
		strict := push.NewSender(e.store, e.svc, e.pm, mustRenderer(t), vapid, webhooks.NewClient(false), push.Options{Schedule: fast}, slog.New(slog.DiscardHandler))
		sent, err := e.svc.Send(context.Background(), "identity", courier.SendRequest{Template: courier.TemplateWelcome, To: u.Email, Data: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		e.sender = strict
		pushes := e.settle(t, sent.ID)
		if pushes[0].Status != courier.PushFailed || !strings.Contains(pushes[0].History[len(pushes[0].History)-1].Detail, "not public") {
			t.Errorf("push = %+v, want failed at a guarded address", pushes[0])
		}
		if got := e.ps.received("b3"); len(got) != 0 {
			t.Errorf("the guarded push service received %d", len(got))
		}
	})
}

func mustRenderer(t *testing.T) *courier.Renderer {
	r, err := courier.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseVAPID(t *testing.T) {
	v, err := push.GenerateVAPID(subject)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := push.GenerateVAPID(subject)
	for _, tt := range []struct {
		name, pub, priv, sub, want string
	}{
		{"OK", v.PublicKey, v.PrivateKey, subject, ""},
		{"HTTPSSubject", v.PublicKey, v.PrivateKey, "https://platform.example/contact", ""},
		{"Mismatched", other.PublicKey, v.PrivateKey, subject, "COURIER_VAPID_PUBLIC_KEY"},
		{"ShortPrivate", v.PublicKey, "AAAA", subject, "COURIER_VAPID_PRIVATE_KEY"},
		{"NotAPoint", base64.RawURLEncoding.EncodeToString(make([]byte, 65)), v.PrivateKey, subject, "COURIER_VAPID_PUBLIC_KEY"},
		{"NoSubject", v.PublicKey, v.PrivateKey, "", "COURIER_VAPID_SUBJECT"},
		{"HTTPSubject", v.PublicKey, v.PrivateKey, "http://platform.example", "COURIER_VAPID_SUBJECT"},
		{"BadMailto", v.PublicKey, v.PrivateKey, "mailto:nobody", "COURIER_VAPID_SUBJECT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := push.ParseVAPID(tt.pub, tt.priv, tt.sub)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ParseVAPID: %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("ParseVAPID = %v, want an error naming %s", err, tt.want)
			case err != nil && strings.Contains(err.Error(), v.PrivateKey):
				t.Errorf("the error repeats the private key")
			}
		})
	}
}
