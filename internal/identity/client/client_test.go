package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity/client"
	identityhttp "github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// theErrors are a caller's four answers, each with its own code so the
// test can tell them apart.
var theErrors = client.Errors{
	Unauthenticated: errs.New("unauthenticated", "valid bearer token required"),
	Forbidden:       errs.New("forbidden", "platform staff only"),
	NotFound:        errs.New("not_found", "not found"),
	Unavailable:     errs.New("unavailable", "authorization service unavailable"),
}

// faulty fronts a real identity: it forwards everything unless a fault
// replaces the answer.
type faulty struct {
	mu    sync.Mutex
	fault http.HandlerFunc
	proxy *httputil.ReverseProxy
}

func (f *faulty) set(h http.HandlerFunc) {
	f.mu.Lock()
	f.fault = h
	f.mu.Unlock()
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fault := f.fault
	f.mu.Unlock()
	if fault != nil {
		fault(w, r)
		return
	}
	f.proxy.ServeHTTP(w, r)
}

// TestClient runs every call against a real identity on each engine, then
// each failure it must not trust.
func TestClient(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		idp := identitytest.New(t, engine, identitytest.Config{})
		real := httptest.NewServer(identityhttp.NewServer(identityhttp.Deps{Service: idp.Service, Logger: discard()}))
		t.Cleanup(real.Close)
		u, _ := url.Parse(real.URL)
		f := &faulty{proxy: httputil.NewSingleHostReverseProxy(u)}
		front := httptest.NewServer(f)
		t.Cleanup(front.Close)
		c := client.New(client.Options{BaseURL: front.URL, Timeout: 300 * time.Millisecond, Errors: theErrors, Logger: discard()})
		t.Cleanup(c.Close)
		ctx := context.Background()

		ann := idp.User(t, "ann@example.com")
		annTok := idp.Login(t, "ann@example.com")
		team := idp.Team(t, ann, "Ann's team")
		idp.Register(t, "bob@example.com")
		bobTok := idp.Login(t, "bob@example.com")
		if err := idp.Service.SetStaff(ctx, "bob@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		const otherAccount = "5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c"

		t.Run("OK", func(t *testing.T) {
			me, err := c.Me(ctx, annTok)
			if err != nil || me.ID != ann.User.ID || me.Email != "ann@example.com" {
				t.Errorf("Me = %+v, %v; want ann", me, err)
			}
			role, _, err := c.AccountRole(ctx, annTok, team.Account.ID)
			if err != nil || role != "owner" {
				t.Errorf("AccountRole = %q, %v; want owner", role, err)
			}
			if id, err := c.OperatorMe(ctx, bobTok); err != nil || id == "" {
				t.Errorf("OperatorMe(staff) = %q, %v; want bob's id", id, err)
			}
		})
		t.Run("Refusals", func(t *testing.T) {
			if _, err := c.OperatorMe(ctx, annTok); errs.Code(err) != "forbidden" {
				t.Errorf("OperatorMe(not staff) = %v, want forbidden", err)
			}
			if _, _, err := c.AccountRole(ctx, annTok, otherAccount); errs.Code(err) != "not_found" {
				t.Errorf("AccountRole(not a member) = %v, want not_found", err)
			}
			if _, err := c.Me(ctx, annTok+"x"); errs.Code(err) != "unauthenticated" {
				t.Errorf("Me(forged) = %v, want unauthenticated", err)
			}
			if _, err := c.Me(ctx, ""); errs.Code(err) != "unauthenticated" {
				t.Errorf("Me(no token) = %v, want unauthenticated", err)
			}
		})

		tests := []struct {
			name  string
			fault http.HandlerFunc
			want  string
		}{
			{"Unauthorized", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }, "unauthenticated"},
			{"ServerError", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, "unavailable"},
			{"Forbidden", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }, ""},
			{"Redirect", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://example.com/login", http.StatusFound)
			}, "unavailable"},
			{"Malformed", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"id":`) }, "unavailable"},
			{"Trailing", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"id":"x"} {}`) }, "unavailable"},
			{"TooLarge", func(w http.ResponseWriter, _ *http.Request) {
				io.WriteString(w, `{"id":"`+string(make([]byte, client.MaxBodyBytes))+`"}`)
			}, "unavailable"},
			{"OtherAccount", func(w http.ResponseWriter, _ *http.Request) {
				io.WriteString(w, `{"id":"11111111-1111-4111-8111-111111111111","role":"owner","user":{"id":"u","staff":false}}`)
			}, ""},
			{"Slow", func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(2 * time.Second):
				}
			}, "unavailable"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f.set(tt.fault)
				t.Cleanup(func() { f.set(nil) })
				want := map[string]string{"me": tt.want, "account": tt.want, "operator_me": tt.want}
				switch tt.name {
				case "Forbidden": // identity's 403: staff refused, else not trusted
					want = map[string]string{"me": "unavailable", "account": "unavailable", "operator_me": "forbidden"}
				case "OtherAccount": // a well-formed answer about someone else
					want = map[string]string{"me": "", "account": "unavailable", "operator_me": "forbidden"}
				}
				if _, err := c.Me(ctx, annTok); errs.Code(err) != want["me"] {
					t.Errorf("Me = %v, want %q", err, want["me"])
				}
				if _, _, err := c.AccountRole(ctx, annTok, team.Account.ID); errs.Code(err) != want["account"] {
					t.Errorf("AccountRole = %v, want %q", err, want["account"])
				}
				if _, err := c.OperatorMe(ctx, annTok); errs.Code(err) != want["operator_me"] {
					t.Errorf("OperatorMe = %v, want %q", err, want["operator_me"])
				}
			})
		}
	})

	t.Run("NotConfigured", func(t *testing.T) {
		c := client.New(client.Options{Errors: theErrors, Logger: discard()})
		if _, err := c.Me(context.Background(), "a-token"); errs.Code(err) != "unavailable" {
			t.Errorf("Me = %v, want unavailable", err)
		}
	})
	t.Run("AnswersAreCopies", func(t *testing.T) {
		c := client.New(client.Options{Errors: theErrors, Logger: discard()})
		_, err := c.Me(context.Background(), "a-token")
		e, _ := errs.As(err)
		e.RetryAfter = time.Minute
		if theErrors.Unavailable.RetryAfter != 0 {
			t.Error("changing an answer changed the caller's template")
		}
	})
}
