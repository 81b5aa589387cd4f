package darkroomcmd_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/darkroom/devs3"
)

const urlKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

func load(t *testing.T, env map[string]string) (darkroomcmd.Config, error) {
	t.Helper()
	var cfg darkroomcmd.Config
	err := darkroomcmd.Command.Load(t.Context(), func(k string) string { return env[k] }, &cfg)
	return cfg, err
}

// TestConfigRefusals: every bad value stops darkroom with a line naming
// its variable, and the secrets never appear.
func TestConfigRefusals(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"DARKROOM_S3_BUCKET": "media", "DARKROOM_S3_REGION": "eu-west-1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // the variable named; "" is accepted
	}{
		{"aws", base(), ""},
		{"custom endpoint", base("DARKROOM_S3_ENDPOINT", "https://acct.r2.example", "DARKROOM_S3_REGION", ""), ""},
		{"custom endpoint, auto", base("DARKROOM_S3_ENDPOINT", "https://acct.r2.example", "DARKROOM_S3_REGION", "auto"), ""},
		{"dev store", base("DARKROOM_ENV", "development", "DARKROOM_S3_ENDPOINT", "http://127.0.0.1:8091", "DARKROOM_S3_REGION", ""), ""},
		{"real region on a custom endpoint", base("DARKROOM_S3_ENDPOINT", "https://acct.r2.example"), "DARKROOM_S3_REGION"},
		{"auto without an endpoint", base("DARKROOM_S3_REGION", "auto"), "DARKROOM_S3_REGION"},
		{"no region", base("DARKROOM_S3_REGION", ""), "DARKROOM_S3_REGION"},
		{"nonsense region", base("DARKROOM_S3_REGION", "Mars"), "DARKROOM_S3_REGION"},
		{"no bucket", base("DARKROOM_S3_BUCKET", ""), "DARKROOM_S3_BUCKET"},
		{"plain http outside development", base("DARKROOM_S3_ENDPOINT", "http://store.internal", "DARKROOM_S3_REGION", ""), "DARKROOM_S3_ENDPOINT"},
		{"endpoint with a path", base("DARKROOM_S3_ENDPOINT", "https://s3.example/media", "DARKROOM_S3_REGION", ""), "DARKROOM_S3_ENDPOINT"},
		{"endpoint not a URL", base("DARKROOM_S3_ENDPOINT", "s3.example"), "DARKROOM_S3_ENDPOINT"},
		{"one key", base("DARKROOM_S3_ACCESS_KEY_ID", "AKIA"), "DARKROOM_S3_ACCESS_KEY_ID"},
		{"short URL key", base("DARKROOM_URL_KEY", "c2hvcnQ="), "DARKROOM_URL_KEY"},
		{"good URL key", base("DARKROOM_URL_KEY", urlKey), ""},
		{"bad variants", base("DARKROOM_VARIANTS", "thumb=huge"), "DARKROOM_VARIANTS"},
		{"zero quota", base("DARKROOM_USER_QUOTA_BYTES", "0"), "DARKROOM_USER_QUOTA_BYTES"},
		{"direct over upload", base("DARKROOM_MAX_DIRECT_BYTES", "999999999"), "DARKROOM_MAX_DIRECT_BYTES"},
		{"pixels", base("DARKROOM_MAX_PIXELS", "lots"), "DARKROOM_MAX_PIXELS"},
		{"env", base("DARKROOM_ENV", "staging"), "DARKROOM_ENV"},
	} {
		_, err := load(t, tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal naming %s", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "AKIA"):
			t.Errorf("%s: the error shows a key: %v", tc.name, err)
		}
	}
}

// TestServeReadinessNamesDatabaseAndStore runs darkroom on SQLite and the
// development store: ready, then not once the store is gone.
func TestServeReadinessNamesDatabaseAndStore(t *testing.T) {
	h, err := devs3.New(devs3.Development, t.TempDir(), "media")
	if err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(h)
	defer s3.Close()
	db := "sqlite:" + filepath.Join(t.TempDir(), "darkroom.db")
	if _, err := darkroomcmd.Command.Migrate(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, map[string]string{"DATABASE_URL": db, "DARKROOM_ENV": "development", "DARKROOM_S3_BUCKET": "media",
		"DARKROOM_S3_ENDPOINT": s3.URL, "DARKROOM_URL_KEY": urlKey})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- darkroomcmd.Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	ready := func() (int, map[string]any) {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	waitFor := func(status int) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, body := ready()
			if code == status {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("readyz = %d %v, want %d", code, body, status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	body := waitFor(http.StatusOK)
	deps, _ := body["deps"].(map[string]any)
	if deps["database"] != "ok" || deps["store"] != "ok" || body["engine"] != "sqlite" {
		t.Fatalf("ready body %v", body)
	}
	s3.Close()
	body = waitFor(http.StatusServiceUnavailable)
	if deps, _ := body["deps"].(map[string]any); deps["store"] != "unavailable" {
		t.Fatalf("unready body %v", body)
	}
}
