package webhooks_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/webhooks"
)

// TestClassifyRealFailures makes each kind of failure happen for real
// (a refused address, a name the resolver does not know, a closed port, a
// silent server, a certificate nobody trusts, a server that speaks no
// TLS, one that hangs up) and checks its category, and that the message
// names none of what the raw error does: no address, port or resolver.
func TestClassifyRealFailures(t *testing.T) {
	dns := startDNS(t, map[string]string{"private.customer.test": "10.9.8.7"})
	resolverAddr := dns.conn.LocalAddr().String()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()

	// Silent until the client gives up: with the body read, the server
	// notices the closed connection and cancels the request's context.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(silent.Close)
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(untrusted.Close)
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plain.Close)
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(hangUp.Close)

	// A short timeout for the silent server alone: a TLS handshake on a
	// loaded machine (or under -race) may take longer than it.
	const short, long = 300 * time.Millisecond, 10 * time.Second
	dev := webhooks.NewClientWith(webhooks.ClientOptions{Development: true, Timeout: long, Resolver: dns.resolver()})
	quick := webhooks.NewClientWith(webhooks.ClientOptions{Development: true, Timeout: short, Resolver: dns.resolver()})
	prod := webhooks.NewClientWith(webhooks.ClientOptions{Timeout: long, Resolver: dns.resolver()})
	for _, tt := range []struct {
		name, url string
		client    *http.Client
		category  string
	}{
		{"BlockedAddress", "https://private.customer.test/hook", prod, courier.AttemptBlockedAddress},
		{"DNS", "https://missing.customer.test/hook", prod, courier.AttemptDNS},
		{"Refused", closedURL, dev, courier.AttemptRefused},
		{"Timeout", silent.URL, quick, courier.AttemptTimeout},
		{"UntrustedCertificate", untrusted.URL, dev, courier.AttemptTLS},
		{"NoTLS", strings.Replace(plain.URL, "http://", "https://", 1), dev, courier.AttemptTLS},
		{"HungUp", hangUp.URL, dev, courier.AttemptConnection},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.client.Post(tt.url, "application/json", strings.NewReader(`{}`))
			if err == nil {
				res.Body.Close()
				t.Fatalf("POST %s succeeded", tt.url)
			}
			category, message := webhooks.Classify(err, tt.client.Timeout)
			if category != tt.category {
				t.Errorf("category = %q, want %q (raw: %v)", category, tt.category, err)
			}
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(tt.url, "/"), "http://"), "https://"))
			for _, secret := range []string{resolverAddr, "127.0.0.1", "10.9.8.7", "lookup", "dial", "customer.test", port} {
				if secret != "" && strings.Contains(message, secret) {
					t.Errorf("message %q shows %q", message, secret)
				}
			}
			if message == "" {
				t.Error("no message")
			}
		})
	}
}
