package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// fuzzServer is identity over a fresh SQLite database, with one user
// signed in who owns a team account.
func fuzzServer(f *testing.F) (h http.Handler, token, accountID, userID string) {
	f.Helper()
	db := sqltest.Open(f, sqldb.SQLite, sqlstore.Migrations)
	store := sqlstore.New(db)
	master := make([]byte, 32)
	_, _ = rand.Read(master)
	keys, err := identity.NewKeys(store, master)
	if err != nil {
		f.Fatal(err)
	}
	ring := identity.NewKeyRing(keys)
	if err := ring.Refresh(context.Background()); err != nil {
		f.Fatal(err)
	}
	svc := identity.NewService(store, identity.NewHasher(identity.HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 0), ring,
		identity.Options{Issuer: "http://identity.test", SessionTTL: 3600e9, LockoutThreshold: 1000, LockoutDuration: 60e9, Now: db.Now})
	h = httpapi.NewServer(httpapi.Deps{
		Service: svc, Idempotency: idempotency.New(db, make([]byte, idempotency.SecretSize)),
		Ready:  func(context.Context) httpx.Readiness { return httpx.Readiness{Ready: true, Body: map[string]string{}} },
		Logger: slog.New(slog.DiscardHandler),
	})
	ctx := context.Background()
	u, err := svc.Register(ctx, identity.RegisterInput{Email: "fuzz@example.com", Password: "fuzz password"})
	if err != nil {
		f.Fatal(err)
	}
	token, _, err = svc.Login(ctx, "fuzz@example.com", "fuzz password")
	if err != nil {
		f.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, token, "")
	if err != nil {
		f.Fatal(err)
	}
	acc, err := svc.CreateAccount(ctx, p, "Fuzz Team")
	if err != nil {
		f.Fatal(err)
	}
	return h, token, acc.ID, u.ID
}

// FuzzRequests sends arbitrary bodies to every identity route that reads
// one: whatever arrives, the answer is never a 500 and never a panic.
func FuzzRequests(f *testing.F) {
	h, token, accountID, userID := fuzzServer(f)
	routes := []struct{ method, path string }{
		{"POST", "/v1/users"},
		{"POST", "/v1/session"},
		{"POST", "/v1/accounts"},
		{"PATCH", "/v1/accounts/" + accountID},
		{"PATCH", "/v1/accounts/" + accountID + "/members/" + userID},
		{"POST", "/v1/accounts/" + accountID + "/invitations"},
		{"POST", "/v1/invitations/accept"},
	}
	seeds := []string{
		`{"email":"x@y.z","password":"12345678"}`, `{"name":"Team ' OR 1=1 --"}`, `{"role":"owner"}`,
		`{"email":"a@b.co","role":"admin"}`, `{"token":"%00"}`, `{"name":""}`, `{"email":["a"]}`,
		`{"password":"` + strings.Repeat("p", 200) + `"}`, `{"name":"\u0000"}`, `not json`, `{}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		rt := routes[int(route)%len(routes)]
		r := httptest.NewRequest(rt.method, rt.path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d: %s", rt.method, rt.path, body, w.Code, w.Body)
		}
		if w.Code >= 400 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: error body is not JSON: %q", rt.method, rt.path, w.Body)
		}
	})
}
