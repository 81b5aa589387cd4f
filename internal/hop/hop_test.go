package hop_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/hop"
)

// upstream is a real net/http server that counts the connections it
// accepted and closed.
type upstream struct {
	*httptest.Server
	opened, closed atomic.Int64
	mu             sync.Mutex
	conns          map[net.Conn]http.ConnState
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{conns: make(map[net.Conn]http.ConnState)}
	u.Server = httptest.NewUnstartedServer(h)
	u.Config.ConnState = func(c net.Conn, s http.ConnState) {
		u.mu.Lock()
		u.conns[c] = s
		u.mu.Unlock()
		switch s {
		case http.StateNew:
			u.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			u.closed.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// closeIdle closes, from the server's side, every connection that waits
// for its next request.
func (u *upstream) closeIdle() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c, s := range u.conns {
		if s == http.StateIdle {
			_ = c.Close()
		}
	}
}

// countingFallback is net/http's transport, counting what it is given.
type countingFallback struct {
	http.Transport
	calls atomic.Int64
}

func (f *countingFallback) RoundTrip(r *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	return f.Transport.RoundTrip(r)
}

func newTransport(t *testing.T) (*hop.Transport, *countingFallback) {
	t.Helper()
	fb := &countingFallback{}
	tr := &hop.Transport{Fallback: fb, MaxIdlePerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return tr, fb
}

// get sends a GET for path through tr and returns the status and body.
func get(t *testing.T, tr http.RoundTripper, ctx context.Context, url string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func echoPath(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Path", r.URL.Path)
	_, _ = io.WriteString(w, "path="+r.URL.Path)
}

func TestKeepsConnectionsAlive(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		method  string
		want    string
	}{
		{"ContentLength", echoPath, http.MethodGet, "path=/a"},
		{"Chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			for _, part := range []string{"one ", "two ", "three"} {
				_, _ = io.WriteString(w, part)
				w.(http.Flusher).Flush()
			}
			w.Header().Set("X-Sum", "3")
		}, http.MethodGet, "one two three"},
		{"NoContent", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, http.MethodGet, ""},
		{"Head", echoPath, http.MethodHead, ""},
		{"ErrorStatus", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", http.StatusNotFound) }, http.MethodGet, "nope\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.handler)
			tr, fb := newTransport(t)
			for i := 0; i < 5; i++ {
				req, _ := http.NewRequest(tt.method, up.URL+"/a", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != tt.want {
					t.Fatalf("request %d: body %q, %v; want %q", i, b, err, tt.want)
				}
				if tt.name == "Chunked" && resp.Trailer.Get("X-Sum") != "3" {
					t.Fatalf("request %d: trailer %q, want 3", i, resp.Trailer.Get("X-Sum"))
				}
			}
			if n := up.opened.Load(); n != 1 {
				t.Fatalf("five requests opened %d connections, want 1", n)
			}
			if n := fb.calls.Load(); n != 0 {
				t.Fatalf("fallback got %d requests, want 0", n)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "%s %s", r.Method, b)
	})
	tests := []struct {
		name     string
		request  func() *http.Request
		fallback bool
	}{
		{"Get", func() *http.Request { r, _ := http.NewRequest(http.MethodGet, up.URL, nil); return r }, false},
		{"GetNoBody", func() *http.Request { r, _ := http.NewRequest(http.MethodGet, up.URL, http.NoBody); return r }, false},
		{"Post", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("x"))
			return r
		}, true},
		{"PostEmpty", func() *http.Request { r, _ := http.NewRequest(http.MethodPost, up.URL, nil); return r }, true},
		{"GetWithBody", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, up.URL, strings.NewReader("x"))
			return r
		}, true},
		{"Upgrade", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, up.URL, nil)
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
			return r
		}, true},
		{"Close", func() *http.Request { r, _ := http.NewRequest(http.MethodGet, up.URL, nil); r.Close = true; return r }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, fb := newTransport(t)
			resp, err := tr.RoundTrip(tt.request())
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := fb.calls.Load() == 1; got != tt.fallback {
				t.Fatalf("went to the fallback: %v, want %v", got, tt.fallback)
			}
		})
	}
}

func TestProxiedRequestsGoToFallback(t *testing.T) {
	up := newUpstream(t, echoPath)
	tr, fb := newTransport(t)
	proxied := func(r *http.Request) (*url.URL, error) {
		if r.URL.Path == "/proxied" {
			return url.Parse(up.URL) // the upstream stands in for a proxy
		}
		return nil, nil
	}
	tr.Proxy = proxied
	fb.Proxy = proxied
	for _, path := range []string{"/direct", "/proxied"} {
		if _, body, err := get(t, tr, t.Context(), up.URL+path); err != nil || body != "path="+path {
			t.Fatalf("%s: %q, %v", path, body, err)
		}
	}
	if n := fb.calls.Load(); n != 1 {
		t.Fatalf("fallback got %d requests, want 1 (the proxied one)", n)
	}
}

func TestRefusesHeadersThatSplitTheRequest(t *testing.T) {
	var served atomic.Int64
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { served.Add(1) })
	tests := []struct {
		name  string
		key   string
		value string
	}{
		{"NewlineInValue", "X-Note", "a\r\nX-Injected: 1"},
		{"BadName", "X Note", "a"},
		{"ColonInName", "X-Note:", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, _ := newTransport(t)
			req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
			req.Header[tt.key] = []string{tt.value}
			if _, err := tr.RoundTrip(req); err == nil {
				t.Fatal("sent a request with an invalid header")
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the upstream served %d requests, want 0", n)
	}
}

// Connections the upstream closed while they sat idle fail the next request
// on them; that request is sent again, once, on a new connection rather
// than on another idle one, which was most likely closed the same way.
func TestRetriesOnConnectionsClosedWhileIdle(t *testing.T) {
	const open = 3
	var served atomic.Int64
	var arrived sync.WaitGroup
	arrived.Add(open)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) <= open {
			arrived.Done()
			arrived.Wait() // the first three at once, on three connections
		}
		echoPath(w, r)
	})
	tr, _ := newTransport(t)
	var wg sync.WaitGroup
	for i := 0; i < open; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, body, err := get(t, tr, context.Background(), up.URL+"/first"); err != nil || body != "path=/first" {
				t.Errorf("first: %q, %v", body, err)
			}
		}()
	}
	wg.Wait()
	waitFor(t, "the connections idle", func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		idle := 0
		for _, s := range up.conns {
			if s == http.StateIdle {
				idle++
			}
		}
		return idle == open
	})
	up.closeIdle()
	if _, body, err := get(t, tr, t.Context(), up.URL+"/second"); err != nil || body != "path=/second" {
		t.Fatalf("second: %q, %v", body, err)
	}
	if n := up.opened.Load(); n != open+1 {
		t.Fatalf("opened %d connections, want %d", n, open+1)
	}
	if n := served.Load(); n != open+1 {
		t.Fatalf("served %d requests, want %d", n, open+1)
	}
}

// A new connection that fails is not retried: the upstream may have
// received the request, and nothing suggests a second try would fare
// better.
func TestDoesNotRetryNewConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_, _ = c.Read(make([]byte, 4096))
			_ = c.Close()
		}
	}()
	tr, _ := newTransport(t)
	if _, _, err := get(t, tr, t.Context(), "http://"+ln.Addr().String()+"/"); err == nil {
		t.Fatal("want an error from an upstream that hangs up")
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("dialed %d times, want 1", n)
	}
}

// A body closed before its end takes its connection with it: reading the
// rest could take as long as the upstream likes.
func TestEarlyCloseDropsConnection(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = io.WriteString(w, big)
			return
		}
		echoPath(w, r)
	})
	tr, _ := newTransport(t)
	req, _ := http.NewRequest(http.MethodGet, up.URL+"/big", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the connection closed", func() bool { return up.closed.Load() == 1 })
	if _, body, err := get(t, tr, t.Context(), up.URL+"/small"); err != nil || body != "path=/small" {
		t.Fatalf("after an early close: %q, %v", body, err)
	}
	if n := up.opened.Load(); n != 2 {
		t.Fatalf("opened %d connections, want 2 (the first must not be reused)", n)
	}
}

func TestCancelWhileWaitingForAnswer(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	callerGone := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			echoPath(w, r)
			return
		}
		close(entered)
		select {
		case <-r.Context().Done(): // the server saw the connection close
			close(callerGone)
		case <-release:
		}
	})
	defer close(release)
	tr, _ := newTransport(t)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-entered; cancel() }()
	_, _, err := get(t, tr, ctx, up.URL+"/slow")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	<-callerGone
	if _, body, err := get(t, tr, t.Context(), up.URL+"/next"); err != nil || body != "path=/next" {
		t.Fatalf("after a cancelled request: %q, %v", body, err)
	}
}

func TestCancelWhileReadingBody(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			echoPath(w, r)
			return
		}
		_, _ = io.WriteString(w, "first part")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	tr, _ := newTransport(t)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL+"/stream", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, len("first part"))); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("reading on after the context ended did not fail")
	}
	resp.Body.Close()
	if _, body, err := get(t, tr, t.Context(), up.URL+"/next"); err != nil || body != "path=/next" {
		t.Fatalf("after a cancelled body: %q, %v", body, err)
	}
	if n := up.opened.Load(); n != 2 {
		t.Fatalf("opened %d connections, want 2 (the cancelled one must not be reused)", n)
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	var served atomic.Int64
	release := make(chan struct{})
	defer close(release)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			served.Add(1)
			<-release
		}
		echoPath(w, r)
	})
	tr, _ := newTransport(t)
	tr.ResponseHeaderTimeout = 100 * time.Millisecond
	// A first request leaves a reused connection, which a retry would
	// otherwise be allowed on.
	if _, _, err := get(t, tr, t.Context(), up.URL+"/warm"); err != nil {
		t.Fatal(err)
	}
	_, _, err := get(t, tr, t.Context(), up.URL+"/slow")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("the slow request was sent %d times, want 1", n)
	}
}

// A context that ends when the header's timeout would tells the caller
// of its own end, whichever timer the runtime fires first.
func TestContextDeadlineWinsATie(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	tr, _ := newTransport(t)
	const d = 20 * time.Millisecond
	tr.ResponseHeaderTimeout = d
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		_, _, err := get(t, tr, ctx, up.URL+"/slow")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try %d: err = %v, want context.DeadlineExceeded", i, err)
		}
	}
}

func TestInformationalAnswers(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		echoPath(w, r)
	})
	tr, _ := newTransport(t)
	var got []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		got = append(got, fmt.Sprintf("%d %s", code, h.Get("Link")))
		return nil
	}}
	ctx := httptrace.WithClientTrace(t.Context(), trace)
	status, body, err := get(t, tr, ctx, up.URL+"/page")
	if err != nil || status != http.StatusOK || body != "path=/page" {
		t.Fatalf("got %d %q, %v", status, body, err)
	}
	if len(got) != 1 || got[0] != "103 </style.css>; rel=preload" {
		t.Fatalf("informational answers %q", got)
	}
}

// An answer refused for what it says is not asked for again: it would come
// back the same. The connection it came on is dropped, and the next request
// is served.
func TestRefusedAnswersAreNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter) // before the body
		want   string                      // in the error: each case is refused for its own reason
	}{
		// A 4 KiB header under a 1 KiB limit.
		{"HeaderOverLimit", func(w http.ResponseWriter) { w.Header().Set("X-Padding", strings.Repeat("p", 4096)) }, "over the limit"},
		// Past five informational answers, as net/http's transport refuses;
		// together they stay well under the 1 KiB limit.
		{"EndlessInformational", func(w http.ResponseWriter) {
			for i := 0; i < 6; i++ {
				w.WriteHeader(http.StatusEarlyHints)
			}
		}, "more than 5 informational answers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var served atomic.Int64
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/refused" {
					served.Add(1)
					tt.answer(w)
				}
				echoPath(w, r)
			})
			tr, _ := newTransport(t)
			tr.MaxResponseHeaderBytes = 1024
			if _, _, err := get(t, tr, t.Context(), up.URL+"/warm"); err != nil {
				t.Fatal(err) // leaves a reused connection for the next request
			}
			if _, _, err := get(t, tr, t.Context(), up.URL+"/refused"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
			if n := served.Load(); n != 1 {
				t.Fatalf("the request was sent %d times, want 1", n)
			}
			if _, body, err := get(t, tr, t.Context(), up.URL+"/after"); err != nil || body != "path=/after" {
				t.Fatalf("after a refused answer: %q, %v", body, err)
			}
		})
	}
}

func TestClosesIdleConnectionsAfterTimeout(t *testing.T) {
	up := newUpstream(t, echoPath)
	tr, _ := newTransport(t)
	tr.IdleTimeout = 50 * time.Millisecond
	if _, _, err := get(t, tr, t.Context(), up.URL+"/a"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the idle connection closed", func() bool { return up.closed.Load() == 1 })
	if _, body, err := get(t, tr, t.Context(), up.URL+"/b"); err != nil || body != "path=/b" {
		t.Fatalf("after the sweep: %q, %v", body, err)
	}
}

func TestKeepsAtMostMaxIdle(t *testing.T) {
	release := make(chan struct{})
	var waiting sync.WaitGroup
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		waiting.Done()
		<-release
		echoPath(w, r)
	})
	tr, _ := newTransport(t)
	tr.MaxIdlePerHost = 2
	const n = 6
	waiting.Add(n)
	var done sync.WaitGroup
	for i := 0; i < n; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			if _, _, err := get(t, tr, context.Background(), up.URL+"/x"); err != nil {
				t.Error(err)
			}
		}()
	}
	waiting.Wait() // six requests on six connections at once
	close(release)
	done.Wait()
	waitFor(t, "four connections closed", func() bool { return up.closed.Load() == n-2 })
}

// TestRace sends many requests at once from many goroutines: each must get
// its own answer, whatever connection it went over, with some answers
// abandoned half read and some contexts ending on the way.
func TestRace(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("big") != "" {
			_, _ = io.WriteString(w, strings.Repeat("y", 64<<10))
			return
		}
		echoPath(w, r)
	})
	tr, _ := newTransport(t)
	tr.MaxIdlePerHost = 8
	const workers, each = 64, 40
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				path := fmt.Sprintf("/w%d/r%d", w, i)
				switch i % 10 {
				case 3: // abandoned half read
					req, _ := http.NewRequest(http.MethodGet, up.URL+path+"?big=1", nil)
					resp, err := tr.RoundTrip(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.ReadFull(resp.Body, make([]byte, 100))
					resp.Body.Close()
				case 7: // the context ends at once
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					if _, _, err := get(t, tr, ctx, up.URL+path); !errors.Is(err, context.Canceled) {
						t.Errorf("%s: err = %v, want context.Canceled", path, err)
					}
				default:
					_, body, err := get(t, tr, context.Background(), up.URL+path)
					if err != nil || body != "path="+path {
						t.Errorf("%s: got %q, %v", path, body, err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNewTakesTheFallbacksSettings: a Transport built by New dials with the
// fallback's dialer, caps and times the answer's header as the fallback
// would, sends what the fallback's proxy function names a proxy for to the
// fallback, and keeps as many idle connections, for as long, as the
// fallback would.
func TestNewTakesTheFallbacksSettings(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("X-Padding", strings.Repeat("p", 4096))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
		echoPath(w, r)
	})
	proxy := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "via proxy")
	})
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int64
	tr := hop.New(&http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		Proxy: func(r *http.Request) (*url.URL, error) {
			if r.URL.Path == "/proxied" {
				return proxyURL, nil
			}
			return nil, nil
		},
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        time.Second, // long enough for the pairs below, on a busy machine too
		ResponseHeaderTimeout:  100 * time.Millisecond,
		MaxResponseHeaderBytes: 1024,
	})
	t.Cleanup(tr.CloseIdleConnections)

	if _, body, err := get(t, tr, t.Context(), up.URL+"/a"); err != nil || body != "path=/a" {
		t.Fatalf("/a: %q, %v", body, err)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("dials through the fallback's dialer = %d, want 1", n)
	}
	if _, _, err := get(t, tr, t.Context(), up.URL+"/big"); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a 4 KiB header under the fallback's 1 KiB cap: err = %v", err)
	}
	var ne net.Error
	if _, _, err := get(t, tr, t.Context(), up.URL+"/slow"); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a header later than the fallback's timeout: err = %v, want a timeout", err)
	}
	if _, body, err := get(t, tr, t.Context(), up.URL+"/proxied"); err != nil || body != "via proxy" {
		t.Fatalf("/proxied: %q, %v; want the fallback to send it to the proxy", body, err)
	}
	// Two answers held open at once take two connections; with the
	// fallback's one idle connection per host, only one is kept, so the
	// next pair dials once.
	pair := func() {
		var bodies []io.ReadCloser
		for _, path := range []string{"/b", "/c"} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, up.URL+path, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, resp.Body)
		}
		for _, b := range bodies {
			_, _ = io.Copy(io.Discard, b)
			b.Close()
		}
	}
	pair()
	before := dials.Load()
	pair()
	if n := dials.Load() - before; n != 1 {
		t.Fatalf("a second pair dialed %d times, want 1 (one idle connection kept)", n)
	}
	waitFor(t, "the upstream's connections closed after the fallback's idle timeout", func() bool {
		return up.closed.Load() == up.opened.Load()
	})
}
