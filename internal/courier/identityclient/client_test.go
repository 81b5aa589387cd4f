package identityclient_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/identityclient"
	"github.com/platformco/platform/internal/errs"
	identityhttp "github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/testutil"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// faulty fronts a real identity: it forwards everything, except that the
// answer to /v1/me and /v1/accounts/… can be replaced by a fault.
type faulty struct {
	mu    sync.Mutex
	fault http.HandlerFunc
	proxy *httputil.ReverseProxy
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fault := f.fault
	f.mu.Unlock()
	if fault != nil && !strings.HasPrefix(r.URL.Path, "/.well-known/") {
		fault(w, r)
		return
	}
	f.proxy.ServeHTTP(w, r)
}

func TestFailsClosed(t *testing.T) {
	idp := identitytest.New(t, sqldb.SQLite, identitytest.Config{})
	real := httptest.NewServer(identityhttp.NewServer(identityhttp.Deps{Service: idp.Service, Logger: discard()}))
	t.Cleanup(real.Close)
	u, _ := url.Parse(real.URL)
	f := &faulty{proxy: httputil.NewSingleHostReverseProxy(u)}
	front := httptest.NewServer(f)
	t.Cleanup(front.Close)
	c := identityclient.New(identityclient.Options{Issuer: identitytest.Issuer, JWKSURL: front.URL + "/.well-known/jwks.json",
		BaseURL: front.URL, Timeout: 300 * time.Millisecond, Logger: discard()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, 10*time.Second, "the key set to load", c.KeysUsable)
	idp.Register(t, "ann@example.com")
	tok := idp.Login(t, "ann@example.com")

	if u, err := c.User(context.Background(), tok); err != nil || u.Email != "ann@example.com" {
		t.Fatalf("User = %+v, %v; want ann", u, err)
	}
	tests := []struct {
		name  string
		fault http.HandlerFunc
		want  string
	}{
		{"Unauthorized", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }, courier.CodeUnauthorized},
		{"ServerError", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, courier.CodeUnavailable},
		{"Redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://example.com/login", http.StatusFound)
		}, courier.CodeUnavailable},
		{"Malformed", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"id":`) }, courier.CodeUnavailable},
		{"OtherUser", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"id":"11111111-1111-4111-8111-111111111111","email":"eve@example.com","role":"owner"}`)
		}, courier.CodeUnavailable},
		{"Slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, courier.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			f.fault = tt.fault
			f.mu.Unlock()
			if _, err := c.User(context.Background(), tok); errs.Code(err) != tt.want {
				t.Errorf("User = %v, want %s", err, tt.want)
			}
			if _, err := c.AccountRole(context.Background(), tok, "5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c"); errs.Code(err) != tt.want {
				t.Errorf("AccountRole = %v, want %s", err, tt.want)
			}
		})
	}
	f.mu.Lock()
	f.fault = nil
	f.mu.Unlock()
	if _, err := c.User(context.Background(), tok+"x"); errs.Code(err) != courier.CodeUnauthorized {
		t.Errorf("a forged token = %v, want unauthorized without asking identity", err)
	}
	if _, err := c.User(context.Background(), ""); errs.Code(err) != courier.CodeUnauthorized {
		t.Errorf("no token = %v, want unauthorized", err)
	}
	unconfigured := identityclient.New(identityclient.Options{Logger: discard()})
	if _, err := unconfigured.User(context.Background(), tok); errs.Code(err) != courier.CodeUnavailable {
		t.Errorf("unconfigured = %v, want unavailable", err)
	}
}
