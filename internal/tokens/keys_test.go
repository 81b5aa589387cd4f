package tokens_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/testutil"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

func TestParseSet(t *testing.T) {
	ks := tokenstest.NewKeyServer(t, nil)
	ks.AddKey(t, "ec", "ES256")
	ed := tokenstest.PublicJWK(ks.Key("k1"))
	ec := tokenstest.PublicJWK(ks.Key("ec"))
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	doc := func(keys ...any) []byte {
		b, _ := json.Marshal(map[string]any{"keys": keys})
		return b
	}
	tests := []struct {
		name     string
		body     []byte
		wantKids []string
		wantErr  bool
	}{
		{"OKAndBothAlgorithms", doc(ed, ec), []string{"k1", "ec"}, false},
		{"OKAlgInferredFromKeyType", doc(with(ed, "alg", ""), with(ec, "alg", "")), []string{"k1", "ec"}, false},
		{"SkipsKeyWithoutKid", doc(with(ed, "kid", ""), ec), []string{"ec"}, false},
		{"SkipsEncryptionKey", doc(with(ed, "use", "enc"), ec), []string{"ec"}, false},
		{"SkipsPublishedPrivateKey", doc(with(ed, "d", "AAAA"), ec), []string{"ec"}, false},
		{"SkipsSymmetricKey", doc(map[string]string{"kty": "oct", "k": "c2VjcmV0", "kid": "h", "alg": "HS256"}, ec), []string{"ec"}, false},
		{"SkipsRSAKey", doc(map[string]string{"kty": "RSA", "n": "AQAB", "e": "AQAB", "kid": "r", "alg": "RS256"}, ec), []string{"ec"}, false},
		{"SkipsOKPDeclaringHS256", doc(with(ed, "alg", "HS256"), ec), []string{"ec"}, false},
		{"SkipsOKPDeclaringES256", doc(with(ed, "alg", "ES256"), ec), []string{"ec"}, false},
		{"SkipsECDeclaringEdDSA", doc(with(ec, "alg", "EdDSA"), ed), []string{"k1"}, false},
		{"SkipsX25519", doc(with(ed, "crv", "X25519"), ec), []string{"ec"}, false},
		{"SkipsP384", doc(with(ec, "crv", "P-384"), ed), []string{"k1"}, false},
		{"SkipsKeyOpsWithoutVerify", doc(map[string]any{"kty": "OKP", "crv": "Ed25519", "x": ed["x"], "kid": "ops", "key_ops": []string{"sign"}}, ec), []string{"ec"}, false},
		{"OKKeyOpsWithVerify", doc(map[string]any{"kty": "OKP", "crv": "Ed25519", "x": ed["x"], "kid": "ops", "key_ops": []string{"verify"}}), []string{"ops"}, false},
		{"SkipsShortEd25519Key", doc(with(ed, "x", "AAAA"), ec), []string{"ec"}, false},
		{"SkipsPointOffCurve", doc(with(ec, "y", ed["x"]), ed), []string{"k1"}, false},
		{"DropsDuplicateKid", doc(ed, with(ec, "kid", "k1"), with(ec, "kid", "other")), []string{"other"}, false},
		{"ErrNotJSON", []byte(`<html>`), nil, true},
		{"ErrNoKeysArray", []byte(`{"kty":"OKP"}`), nil, true},
		{"ErrEmptySet", doc(), nil, true},
		{"ErrNothingUsable", doc(with(ed, "use", "enc")), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, _, err := tokens.ParseSet(tt.body)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(keys) != len(tt.wantKids) {
				t.Fatalf("got %d keys, want %v", len(keys), tt.wantKids)
			}
			for _, kid := range tt.wantKids {
				if _, ok := keys[kid]; !ok {
					t.Errorf("kid %q missing", kid)
				}
			}
		})
	}
}

func startCache(t *testing.T, opts tokens.Options) *tokens.Cache {
	t.Helper()
	c := tokens.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func usable(c *tokens.Cache) func() bool {
	return func() bool { return c.Status(time.Now()).Usable }
}

func TestCacheNeverLoadedIsUnusable(t *testing.T) {
	ks := tokenstest.NewKeyServer(t, nil)
	ks.SetMode(tokenstest.Fail)
	c := startCache(t, tokens.Options{URL: ks.JWKSURL(), TTL: time.Minute})
	testutil.Eventually(t, 10*time.Second, "a failed fetch", func() bool { return ks.Hits() >= 2 })
	st := c.Status(time.Now())
	if st.Usable || st.Loaded {
		t.Fatalf("status = %+v, want neither usable nor loaded", st)
	}
	if st.RetryAfter < time.Second {
		t.Errorf("RetryAfter = %v, want at least 1s", st.RetryAfter)
	}
	if _, ok := c.Lookup("k1", time.Now()); ok {
		t.Error("Lookup found a key in a never-loaded cache")
	}
}

func TestCacheSlowKeySetIsAnOutage(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	c := startCache(t, tokens.Options{URL: srv.URL, TTL: time.Minute, FetchTimeout: 100 * time.Millisecond})
	testutil.Eventually(t, 10*time.Second, "two timed-out fetches", func() bool { return c.Fetches() >= 2 })
	if c.Status(time.Now()).Usable {
		t.Fatal("a key set slower than the fetch timeout was used")
	}
}

func TestCacheBadAnswerNeverReplacesGoodKeys(t *testing.T) {
	for _, mode := range []tokenstest.Mode{tokenstest.Garbage, tokenstest.Fail} {
		ks := tokenstest.NewKeyServer(t, nil)
		c := startCache(t, tokens.Options{URL: ks.JWKSURL(), TTL: time.Minute, Cooldown: time.Millisecond})
		testutil.Eventually(t, 10*time.Second, "the first load", usable(c))
		ks.SetMode(mode)
		before := ks.Hits()
		if !c.RefreshEarly(context.Background()) {
			t.Fatal("RefreshEarly refused the first early refresh")
		}
		if ks.Hits() <= before {
			t.Fatal("RefreshEarly did not fetch")
		}
		if _, ok := c.Lookup("k1", time.Now()); !ok {
			t.Fatalf("mode %d: a bad answer replaced the good keys", mode)
		}
		if !c.Status(time.Now()).Usable {
			t.Fatalf("mode %d: cache unusable after a bad answer before expiry", mode)
		}
	}
}

func TestCacheExpiresWhenRefreshesFail(t *testing.T) {
	ks := tokenstest.NewKeyServer(t, nil)
	c := startCache(t, tokens.Options{URL: ks.JWKSURL(), TTL: 400 * time.Millisecond})
	testutil.Eventually(t, 10*time.Second, "the first load", usable(c))
	ks.SetMode(tokenstest.Fail)
	testutil.Eventually(t, 10*time.Second, "expiry", func() bool { return !c.Status(time.Now()).Usable })
	st := c.Status(time.Now())
	if !st.Loaded {
		t.Error("Loaded = false after a successful load")
	}
	if _, ok := c.Lookup("k1", time.Now()); ok {
		t.Error("an expired key set still answered Lookup")
	}
	ks.SetMode(tokenstest.Serve)
	testutil.Eventually(t, 10*time.Second, "recovery", usable(c))
}

func TestCacheRefreshesInBackground(t *testing.T) {
	ks := tokenstest.NewKeyServer(t, nil)
	c := startCache(t, tokens.Options{URL: ks.JWKSURL(), TTL: 300 * time.Millisecond})
	testutil.Eventually(t, 10*time.Second, "the first load", usable(c))
	ks.Publish(ks.AddKey(t, "k2", "ES256"))
	testutil.Eventually(t, 10*time.Second, "rotation to k2", func() bool {
		_, ok := c.Lookup("k2", time.Now())
		return ok
	})
	if _, ok := c.Lookup("k1", time.Now()); ok {
		t.Error("withdrawn key k1 still held after a refresh")
	}
	if !c.Status(time.Now()).Usable {
		t.Error("cache unusable while the key set is healthy")
	}
}

// TestRefreshEarlyOneFetchForManyCallers races many requests naming an
// unknown kid: they share one fetch, and the cooldown refuses another.
func TestRefreshEarlyOneFetchForManyCallers(t *testing.T) {
	var hits atomic.Int64
	ks := tokenstest.NewKeyServer(t, nil)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(50 * time.Millisecond)
		resp, err := http.Get(ks.JWKSURL())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_, _ = w.Write(body)
	}))
	t.Cleanup(slow.Close)
	c := startCache(t, tokens.Options{URL: slow.URL, TTL: time.Minute, Cooldown: time.Minute})
	testutil.Eventually(t, 10*time.Second, "the first load", usable(c))
	before := hits.Load()

	ks.Publish("k1", ks.AddKey(t, "k2", "EdDSA"))
	const callers = 50
	var wg sync.WaitGroup
	var refreshed atomic.Int64
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.RefreshEarly(context.Background()) {
				refreshed.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := hits.Load() - before; got != 1 {
		t.Fatalf("early fetches = %d, want 1", got)
	}
	if _, ok := c.Lookup("k2", time.Now()); !ok {
		t.Fatal("k2 not loaded by the early refresh")
	}
	if refreshed.Load() == 0 {
		t.Fatal("no caller saw the refresh")
	}
	if c.RefreshEarly(context.Background()) {
		t.Fatal("a second early refresh ran inside the cooldown")
	}
	if got := hits.Load() - before; got != 1 {
		t.Fatalf("fetches after the cooldown refusal = %d, want 1", got)
	}
}

// TestCheckReportsTheKeySetNow: Check fetches at once and keeps nothing,
// so readiness sees an outage while the held set is still usable.
func TestCheckReportsTheKeySetNow(t *testing.T) {
	ks := tokenstest.NewKeyServer(t, nil)
	c := startCache(t, tokens.Options{URL: ks.JWKSURL(), TTL: time.Minute})
	testutil.Eventually(t, 10*time.Second, "the first load", usable(c))
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v with the key set up", err)
	}
	for _, mode := range []tokenstest.Mode{tokenstest.Fail, tokenstest.Garbage} {
		ks.SetMode(mode)
		if err := c.Check(context.Background()); err == nil {
			t.Errorf("mode %d: Check = nil, want the outage", mode)
		}
		if !c.Status(time.Now()).Usable {
			t.Errorf("mode %d: Check dropped the held key set", mode)
		}
	}
	ks.SetMode(tokenstest.Serve)
	ks.Publish() // an empty set
	if err := c.Check(context.Background()); err == nil {
		t.Error("Check = nil for an empty key set")
	}
	if _, ok := c.Lookup("k1", time.Now()); !ok {
		t.Error("Check replaced the held keys")
	}
}
