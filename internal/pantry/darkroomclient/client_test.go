package darkroomclient_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/pantry/darkroomclient"
)

// darkroom returns a darkroom's base URL, a public and a private media id.
// By default it is an httptest server answering darkroom.md section 3's
// anonymous GET/HEAD /v1/media/{id}; with PANTRY_TEST_DARKROOM_URL,
// PANTRY_TEST_DARKROOM_PUBLIC and PANTRY_TEST_DARKROOM_PRIVATE set, the
// same cases run against a real darkroom holding those two media.
func darkroom(t *testing.T) (base, public, private string) {
	if u := os.Getenv("PANTRY_TEST_DARKROOM_URL"); u != "" {
		return u, os.Getenv("PANTRY_TEST_DARKROOM_PUBLIC"), os.Getenv("PANTRY_TEST_DARKROOM_PRIVATE")
	}
	public, private = ids.New(), ids.New()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/media/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != public {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"about:blank","status":404,"title":"Not Found","detail":"no such media","code":"not_found"}`)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("ETag", `"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"`)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		_, _ = io.WriteString(w, "\x89PNG")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, public, private
}

func TestPublic(t *testing.T) {
	base, public, private := darkroom(t)
	c := darkroomclient.New(darkroomclient.Options{BaseURL: base, Timeout: 2 * time.Second})
	defer c.Close()
	for _, tc := range []struct {
		name, id string
		want     bool
	}{
		{"public", public, true},
		{"private", private, false},
		{"missing", ids.New(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Public(context.Background(), tc.id)
			if err != nil || got != tc.want {
				t.Fatalf("Public = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestFailsClosed: anything but darkroom's 200 or 404 is unavailable.
func TestFailsClosed(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"server error": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		"unauthorized": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) },
		"redirect":     func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) },
		"slow":         func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := darkroomclient.New(darkroomclient.Options{BaseURL: srv.URL, Timeout: 200 * time.Millisecond})
			_, err := c.Public(context.Background(), ids.New())
			if errs.Code(err) != pantry.CodeUnavailable {
				t.Fatalf("err = %v, want unavailable", err)
			}
		})
	}
	c := darkroomclient.New(darkroomclient.Options{})
	if _, err := c.Public(context.Background(), ids.New()); errs.Code(err) != pantry.CodeUnavailable {
		t.Fatalf("not configured: err = %v", err)
	}
}
