// Package hop carries requests from one service to another: the gateway's
// forwarded reads and box's calls to identity.
//
// The hot path is a body-less read sent to a service on the same network.
// net/http's Transport serves each connection with two goroutines of its
// own, one writing requests and one reading responses, and a request
// crosses between them and its caller four times. On a machine whose cores
// are already full, those hand-offs and the thread wake-ups behind them
// cost a caller more than its own work. Transport sends such a request from
// the caller's goroutine and reads the answer there too, over a pool of
// kept-alive connections; what goes on the wire and how the answer is read
// is still net/http's own code (Request.Write, http.ReadResponse).
// Everything else, any request with a body among it, goes to the Fallback
// transport.
package hop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// maxInformational bounds the 1xx answers read before the final one.
const maxInformational = 5

// DefaultMaxResponseHeaderBytes is net/http's own default.
const DefaultMaxResponseHeaderBytes = 10 << 20

// Transport is an http.RoundTripper for plain-HTTP upstreams. GET and HEAD
// requests without a body or an Upgrade header, and for which Proxy names no
// proxy, are sent over its own connections; every other request goes to
// Fallback. A request on a reused connection that fails before its answer's
// header is read (the upstream may have closed the connection while it sat
// idle) is sent once more on a new connection, as net/http does for
// replayable requests. A connection the upstream closed is found when it
// is next used, not while it sits idle: net/http's reading goroutine is
// what would notice it earlier.
type Transport struct {
	// Fallback carries the requests Transport does not; required.
	Fallback http.RoundTripper
	// Dial opens connections; nil means a net.Dialer with a 5 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdlePerHost is how many idle connections are kept per upstream
	// address; zero means 2, as in net/http.
	MaxIdlePerHost int
	// IdleTimeout closes a connection idle for this long; zero means 90 s.
	IdleTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for an answer's header from the
	// time the request is sent; zero means no limit beyond the request's
	// context, which wins when it ends first or at the same time.
	ResponseHeaderTimeout time.Duration
	// MaxResponseHeaderBytes caps an answer's header (1xx answers
	// included); zero means DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int64
	// Proxy, when set, is asked as net/http's Transport would ask it
	// (http.ProxyFromEnvironment, say); a request it names a proxy for goes
	// to Fallback, which is expected to use the same function.
	Proxy func(*http.Request) (*url.URL, error)

	mu       sync.Mutex
	idle     map[string][]*conn // by address, most recently used last
	sweeping bool
}

// New returns a Transport that hands fallback what it does not carry
// itself and carries the rest with fallback's own settings: its dialer,
// proxy function, idle connections per host, idle timeout, header timeout
// and header cap. Built this way, the two transports cannot disagree on
// them. A zero IdleConnTimeout, which net/http takes as no limit, gets
// Transport's 90 s.
func New(fallback *http.Transport) *Transport {
	return &Transport{
		Fallback:               fallback,
		Dial:                   fallback.DialContext,
		Proxy:                  fallback.Proxy,
		MaxIdlePerHost:         fallback.MaxIdleConnsPerHost,
		IdleTimeout:            fallback.IdleConnTimeout,
		ResponseHeaderTimeout:  fallback.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: fallback.MaxResponseHeaderBytes,
	}
}

// conn is one kept-alive connection to an upstream.
type conn struct {
	t      *Transport
	addr   string
	nc     net.Conn
	br     *bufio.Reader // reads through the conn itself, to count the header
	bw     *bufio.Writer
	idleAt time.Time
	// readLimit is what the answer's header may still read; it is lifted
	// for the body.
	readLimit int64
	// aborted is set once the request's context ended while the connection
	// was in use; the connection is then never reused.
	aborted atomic.Bool
}

var (
	errUnexpectedSwitch = errors.New("hop: upstream switched protocols for a request that did not ask to")
	errHeaderTooLarge   = errors.New("hop: upstream's answer has a header over the limit")
	// errTooManyInformational is net/http's limit too.
	errTooManyInformational = fmt.Errorf("hop: upstream sent more than %d informational answers", maxInformational)
)

// RoundTrip sends req and returns the upstream's answer. Its errors: the
// request context's error once that context has ended; a refusal of a
// header field that could split the request; an answer that switches
// protocols, sends more than five 1xx answers or has a header over
// MaxResponseHeaderBytes; otherwise the dial, write or read error that
// ended the exchange.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.carries(req) {
		return t.Fallback.RoundTrip(req)
	}
	if t.Proxy != nil {
		if proxy, err := t.Proxy(req); err != nil || proxy != nil {
			return t.Fallback.RoundTrip(req)
		}
	}
	if err := validHeader(req.Header); err != nil {
		return nil, err
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	addr := canonicalAddr(req.URL.Host)
	for attempt := 0; ; attempt++ {
		// A retry dials: the connections idle beside the one that failed
		// have most likely been closed the same way.
		c, reused, err := t.get(ctx, addr, attempt > 0)
		if err != nil {
			return nil, err
		}
		resp, err := c.exchange(req)
		if err == nil {
			return resp, nil
		}
		c.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !reused || attempt > 0 || !retryable(err) {
			return nil, err
		}
	}
}

// retryable reports whether err, ending an exchange on a reused
// connection, may mean only that the upstream had closed it. A timeout or
// an answer refused for what it said would come again.
func retryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return !errors.Is(err, errUnexpectedSwitch) && !errors.Is(err, errHeaderTooLarge) &&
		!errors.Is(err, errTooManyInformational)
}

// carries reports whether req is one Transport sends itself.
func (t *Transport) carries(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	if (req.Body != nil && req.Body != http.NoBody) || req.ContentLength != 0 || req.Close {
		return false
	}
	return req.Header.Get("Upgrade") == "" && len(req.Trailer) == 0
}

// validHeader refuses what net/http's Transport refuses: a header name or
// value that could split the request on the wire.
func validHeader(h http.Header) error {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("hop: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("hop: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// exchange writes req on c and reads the answer's header. On success the
// answer's body hands c back to the pool once read to its end and closed.
func (c *conn) exchange(req *http.Request) (*http.Response, error) {
	// The header's deadline is set only when it comes before the context's:
	// with both at the same time, either could fire first, and the caller
	// would be told of a timeout of the connection instead of its own.
	headerDeadline := false
	if d := c.t.ResponseHeaderTimeout; d > 0 {
		at := time.Now().Add(d)
		if end, ok := req.Context().Deadline(); !ok || at.Before(end) {
			if err := c.nc.SetReadDeadline(at); err != nil {
				return nil, err
			}
			headerDeadline = true
		}
	}
	c.aborted.Store(false)
	stop := context.AfterFunc(req.Context(), c.abort)
	resp, err := c.writeAndRead(req)
	if err != nil {
		stop()
		return nil, err
	}
	if headerDeadline {
		// The body is the caller's to read at its own pace; only the
		// context bounds it from here.
		if err := c.nc.SetReadDeadline(time.Time{}); err != nil {
			stop()
			c.close() // before the body, whose Close would read the rest
			resp.Body.Close()
			return nil, err
		}
		if c.aborted.Load() {
			c.abort() // the context ended between the header and the reset
		}
	}
	keep := !resp.Close
	if resp.Body == http.NoBody {
		if stop() && keep {
			c.t.put(c)
		} else {
			c.close()
		}
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, stop: stop, keep: keep}
	return resp, nil
}

func (c *conn) writeAndRead(req *http.Request) (*http.Response, error) {
	if err := req.Write(c.bw); err != nil {
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	c.readLimit = c.t.maxHeader()
	defer func() { c.readLimit = math.MaxInt64 }()
	for n := 0; ; n++ {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if c.readLimit <= 0 {
				return nil, errHeaderTooLarge
			}
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errUnexpectedSwitch
		case resp.StatusCode >= 200:
			return resp, nil
		case n == maxInformational:
			return nil, errTooManyInformational
		}
		// An informational answer (103 Early Hints, say) goes to whoever
		// asked for them, as ReverseProxy does to pass them on.
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(resp.StatusCode, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// Read reads from the connection, within the header's limit while one is
// being read.
func (c *conn) Read(p []byte) (int, error) {
	if c.readLimit <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > c.readLimit {
		p = p[:c.readLimit]
	}
	n, err := c.nc.Read(p)
	c.readLimit -= int64(n)
	return n, err
}

// abort interrupts whatever c is doing for a request whose context ended.
func (c *conn) abort() {
	c.aborted.Store(true)
	_ = c.nc.SetDeadline(time.Unix(1, 0))
}

func (c *conn) close() { _ = c.nc.Close() }

// body is an answer's body. Read to its end and closed, it returns its
// connection to the pool; closed early, it closes the connection rather
// than read the rest.
type body struct {
	rc   io.ReadCloser
	c    *conn
	stop func() bool
	keep bool

	eof    atomic.Bool
	once   sync.Once
	closed error
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

func (b *body) Close() error {
	b.once.Do(func() {
		// stop reports false when the context's abort already ran (or
		// runs): the connection's deadline is then in the past.
		if b.stop() && b.keep && b.eof.Load() {
			b.closed = b.rc.Close()
			b.c.t.put(b.c)
			return
		}
		b.c.close()
		_ = b.rc.Close()
	})
	return b.closed
}

// get returns an idle connection to addr, or dials a new one (always when
// dial is set); reused tells which.
func (t *Transport) get(ctx context.Context, addr string, dial bool) (c *conn, reused bool, err error) {
	var stale []*conn
	t.mu.Lock()
	list := t.idle[addr]
	for len(list) > 0 && !dial {
		last := list[len(list)-1]
		list = list[:len(list)-1]
		if time.Since(last.idleAt) < t.idleTimeout() {
			c = last
			break
		}
		stale = append(stale, last)
	}
	if t.idle != nil {
		t.idle[addr] = list
	}
	t.mu.Unlock()
	for _, s := range stale {
		s.close()
	}
	if c != nil {
		return c, true, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	dialContext := t.Dial
	if dialContext == nil {
		dialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	nc, err := dialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	c = &conn{t: t, addr: addr, nc: nc, bw: bufio.NewWriter(nc), readLimit: math.MaxInt64}
	c.br = bufio.NewReader(c)
	return c, false, nil
}

// put keeps c for the next request to its address, or closes it when
// enough are kept already.
func (t *Transport) put(c *conn) {
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	list := t.idle[c.addr]
	if len(list) >= t.maxIdle() {
		t.mu.Unlock()
		c.close()
		return
	}
	c.idleAt = time.Now()
	t.idle[c.addr] = append(list, c)
	if !t.sweeping {
		t.sweeping = true
		time.AfterFunc(t.idleTimeout(), t.sweep)
	}
	t.mu.Unlock()
}

// sweep closes the connections idle past the timeout, so that a pool left
// alone after a burst does not hold them open until the upstream drops
// them.
func (t *Transport) sweep() {
	var stale []*conn
	t.mu.Lock()
	for addr, list := range t.idle {
		// The list is oldest first: what expired is a prefix.
		n := 0
		for n < len(list) && time.Since(list[n].idleAt) >= t.idleTimeout() {
			n++
		}
		stale = append(stale, list[:n]...)
		if n == len(list) {
			delete(t.idle, addr)
			continue
		}
		t.idle[addr] = append(list[:0:0], list[n:]...)
	}
	t.sweeping = len(t.idle) > 0
	if t.sweeping {
		time.AfterFunc(t.idleTimeout()/2, t.sweep)
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.close()
	}
}

// CloseIdleConnections closes the idle connections of Transport and of
// its Fallback.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.close()
		}
	}
	if f, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

func (t *Transport) maxIdle() int {
	if t.MaxIdlePerHost > 0 {
		return t.MaxIdlePerHost
	}
	return 2
}

func (t *Transport) maxHeader() int64 {
	if t.MaxResponseHeaderBytes > 0 {
		return t.MaxResponseHeaderBytes
	}
	return DefaultMaxResponseHeaderBytes
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return 90 * time.Second
}

// canonicalAddr adds HTTP's default port to a host that names none.
func canonicalAddr(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return host
	}
	return net.JoinHostPort(trimBrackets(host), "80")
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}
