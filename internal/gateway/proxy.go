package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

// identityCallTimeout bounds the gateway's own calls to identity (login and
// logout).
const identityCallTimeout = 10 * time.Second

// NewHTTPTransport returns net/http's transport with the gateway's
// settings. The default transport keeps two idle connections per host,
// which under load means a new TCP connection for most requests; the edge
// talks to few hosts very often, so it keeps many. Environment proxies are
// ignored: the upstreams are internal addresses.
func NewHTTPTransport() *http.Transport {
	return &http.Transport{
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// upstream is one service behind the gateway.
type upstream struct {
	name  string
	base  *url.URL
	proxy *httputil.ReverseProxy
}

// forward is what the gateway decided about a request that the proxy's
// Rewrite needs: the caller's address and, for a cookie-authenticated
// request, the identity token to send in its place.
type forward struct {
	clientIP string
	proto    string
	bearer   string
	env      envelope // the route's error contract
}

type forwardKey struct{}

// bufferPool lends the proxy its copy buffers instead of allocating 32 KiB
// per request.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

func (g *Gateway) newUpstream(name string, base *url.URL) *upstream {
	pool := &bufferPool{}
	var flush time.Duration
	if name == Keyholder || name == Muse {
		// Registry blobs and model streams pass through: every read is
		// passed on at once instead of waiting for a buffer to fill.
		flush = -1
	}
	return &upstream{
		name: name,
		base: base,
		proxy: &httputil.ReverseProxy{
			// Rewrite, unlike Director, starts from an outbound request with
			// the inbound Forwarded and X-Forwarded-* headers removed, so a
			// caller cannot smuggle its own.
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(base)
				fw, _ := pr.In.Context().Value(forwardKey{}).(forward)
				h := pr.Out.Header
				if fw.clientIP != "" {
					h.Set("X-Forwarded-For", fw.clientIP)
				}
				h.Set("X-Forwarded-Host", pr.In.Host)
				h.Set("X-Forwarded-Proto", fw.proto)
				h.Set(httpx.TraceparentHeader, httpx.TraceFrom(pr.In.Context()).Traceparent())
				if fw.bearer != "" {
					h.Set("Authorization", "Bearer "+fw.bearer)
				}
				stripSessionCookie(pr.Out)
			},
			Transport:     g.opts.Transport,
			BufferPool:    pool,
			FlushInterval: flush,
			ErrorHandler:  g.proxyError(name),
		},
	}
}

// proxyError answers an unreachable or failing upstream with 503
// unavailable in the route's envelope (platform.md section 7: a dependency
// that is down is a 503, never a 502), instead of a dropped connection.
func (g *Gateway) proxyError(name string) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() != nil {
			// The caller went away; there is nobody to answer.
			g.log.InfoContext(r.Context(), "caller left before the upstream answered", "upstream", name,
				"path", r.URL.Path)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		g.log.WarnContext(r.Context(), "upstream request failed", "upstream", name, "method", r.Method, "path", r.URL.Path,
			"err", safeError(err))
		fw, _ := r.Context().Value(forwardKey{}).(forward)
		writeErrorIn(w, r, g.log, fw.env, errs.New(CodeUnavailable, "the "+name+" service could not be reached"))
	}
}

// safeError renders a transport error without its URL, whose query string
// may carry a secret.
func safeError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// serveProxy forwards r to up with the forwarding decisions in fw.
func (g *Gateway) serveProxy(w http.ResponseWriter, r *http.Request, up *upstream, fw forward) {
	r = r.WithContext(context.WithValue(r.Context(), forwardKey{}, fw))
	up.proxy.ServeHTTP(moving(w, r, g.opts.TransferIdle), r)
}

// DefaultTransferIdle is how long a proxied transfer may stand still.
const DefaultTransferIdle = 30 * time.Second

// moving replaces the server's whole-request deadlines (httpx.NewServer:
// 30 s to read a request, 60 s to answer it) on a proxied request with
// deadlines that follow the bytes: each read of the body and each write
// of the answer moves its deadline to idle from then. A 2 GiB download
// or a ten-minute model stream runs for as long as it moves, and a
// caller that stops reading, or stops sending its body, is cut idle
// after its last byte, as before. Waiting for the upstream's first byte
// is bounded by the upstream (and the caller leaving cancels it).
// r is the gateway's own copy of the request (serveProxy's WithContext),
// whose Body it replaces.
func moving(w http.ResponseWriter, r *http.Request, idle time.Duration) http.ResponseWriter {
	rc := http.NewResponseController(w)
	if rc.SetWriteDeadline(time.Time{}) != nil || rc.SetReadDeadline(time.Time{}) != nil {
		return w // a writer without deadlines (a test's recorder)
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &movingBody{ReadCloser: r.Body, d: deadline{rc: rc, idle: idle}}
	}
	return &movingWriter{ResponseWriter: w, d: deadline{rc: rc, idle: idle}}
}

// deadline moves a deadline to idle from now, at most once per idle/4,
// so a deadline is never less than three quarters of idle away when a
// transfer moves.
type deadline struct {
	rc   *http.ResponseController
	idle time.Duration
	next time.Time
}

func (d *deadline) move(set func(*http.ResponseController, time.Time) error) {
	now := time.Now()
	if now.Before(d.next) {
		return
	}
	d.next = now.Add(d.idle / 4)
	_ = set(d.rc, now.Add(d.idle))
}

// movingWriter moves the write deadline on every write of the answer.
type movingWriter struct {
	http.ResponseWriter
	d deadline
}

func (m *movingWriter) WriteHeader(code int) {
	m.d.move((*http.ResponseController).SetWriteDeadline)
	m.ResponseWriter.WriteHeader(code)
}

func (m *movingWriter) Write(p []byte) (int, error) {
	m.d.move((*http.ResponseController).SetWriteDeadline)
	return m.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController (the proxy's flushes) reach the
// server's writer.
func (m *movingWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// movingBody moves the read deadline on every read of the request body.
type movingBody struct {
	io.ReadCloser
	d deadline
}

func (m *movingBody) Read(p []byte) (int, error) {
	m.d.move((*http.ResponseController).SetReadDeadline)
	return m.ReadCloser.Read(p)
}

// stripSessionCookie keeps the gateway's session cookie from reaching an
// upstream: it is the gateway's credential, not theirs.
func stripSessionCookie(out *http.Request) {
	found := false
	for _, v := range out.Header.Values("Cookie") {
		if strings.Contains(v, sessionCookie) {
			found = true
		}
	}
	if !found {
		return
	}
	cookies := out.Cookies()
	out.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != sessionCookie {
			out.AddCookie(c)
		}
	}
}
