//go:build e2e

package parlor_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// devRegistry is `platform dev`'s upstream registry (no auth, loopback).
const devRegistry = "127.0.0.1:8086"

// hookReceiver is a customer's webhook endpoint: it refuses every
// delivery with a 500 until accept is called, and keeps what it was sent.
type hookReceiver struct {
	URL string
	mu  sync.Mutex
	ok  bool
	got []hookRequest
}

type hookRequest struct {
	Status                   int
	ID, Timestamp, Signature string
	Body                     []byte
}

func startHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		status := http.StatusInternalServerError
		if h.ok {
			status = http.StatusNoContent
		}
		h.got = append(h.got, hookRequest{Status: status, ID: r.Header.Get("webhook-id"),
			Timestamp: r.Header.Get("webhook-timestamp"), Signature: r.Header.Get("webhook-signature"), Body: body})
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/hook"
	return h
}

func (h *hookReceiver) accept() { h.mu.Lock(); h.ok = true; h.mu.Unlock() }

// answered is every request answered with status so far.
func (h *hookReceiver) answered(status int) []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookRequest
	for _, r := range h.got {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// signedWith reports whether r carries a Standard Webhooks signature made
// with secret (whsec_ + base64 key) over id.timestamp.body.
func signedWith(r hookRequest, secret string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.ID + "." + r.Timestamp + "." + string(r.Body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.Signature) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// pushRandomImage writes a small random image to the dev registry as
// repo:tag, as an operator's release pipeline would, and returns its
// manifest digest.
func pushRandomImage(t *testing.T, repo, tag string) string {
	t.Helper()
	img, err := random.Image(4096, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(devRegistry+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// pullThroughGateway pulls ref (host/repo:tag) whole with crane, logged in
// with the page's credential, and returns the manifest digest it got.
func pullThroughGateway(t *testing.T, ref, username, password string) string {
	t.Helper()
	opts := []crane.Option{crane.Insecure, crane.WithAuth(&authn.Basic{Username: username, Password: password})}
	img, err := crane.Pull(ref, opts...)
	if err != nil {
		t.Fatalf("crane pull %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("crane pull %s: layers: %v", ref, err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatalf("crane pull %s: layer: %v", ref, err)
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			t.Fatalf("crane pull %s: read layer: %v", ref, err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// text is the text of the element sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("%s: read %s: %v", b.name, sel, err)
	}
	return strings.TrimSpace(v)
}

// checkMailbox fails unless the dev mailbox page answers.
func checkMailbox(t *testing.T) {
	t.Helper()
	resp, err := http.Get("http://localhost:8083/dev/mail")
	if err != nil {
		t.Fatalf("the local mailbox: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("the local mailbox answers %d %s, want 200 text/html", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
