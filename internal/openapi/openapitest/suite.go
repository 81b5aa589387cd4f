package openapitest

// The pieces every service's OpenAPI test suite needs: a check that the
// document names exactly the routes the service registers, an in-process
// client that validates each exchange and records which declared
// responses it saw, and a recorder that proves the validator reports.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// routePattern matches a ServeMux registration with a method pattern,
// mux.Handle("GET /v1/x", …) or mux.HandleFunc("POST /v1/x/{id}", …).
var routePattern = regexp.MustCompile(`mux\.Handle(?:Func)?\("([A-Z]+) (/[^"]*)"`)

// CheckRoutes fails t unless the operations of doc and the patterns
// routesGo (the source of a service's routes.go) registers are the same
// set, so a new route cannot ship undocumented, nor a documented one
// disappear. It also fails when routesGo registers fewer than minRoutes
// routes, which means the registration style changed under the pattern
// it reads.
func CheckRoutes(t TB, doc, routesGo []byte, minRoutes int) {
	t.Helper()
	var registered []string
	for _, m := range routePattern.FindAllStringSubmatch(string(routesGo), -1) {
		registered = append(registered, m[1]+" "+m[2])
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("openapi: the document is not JSON: %v", err)
		return
	}
	var documented []string
	for path, item := range d.Paths {
		for method := range item {
			if method != "parameters" && method != "summary" && method != "description" && method != "servers" && !strings.HasPrefix(method, "x-") {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(registered)
	sort.Strings(documented)
	if strings.Join(registered, "\n") != strings.Join(documented, "\n") {
		t.Errorf("routes.go registers:\n\t%s\nthe document declares:\n\t%s",
			strings.Join(registered, "\n\t"), strings.Join(documented, "\n\t"))
	}
	if len(registered) < minRoutes {
		t.Errorf("found only %d routes in routes.go; has the registration style changed?", len(registered))
	}
}

// Coverage is the set of declared responses a suite's clients saw, each
// named as Document.Responses names it ("GET /v1/me 401", "UNMATCHED
// 404"). Clients that share one add to the same set, so a suite may drive
// several handlers (with and without a database, say) and check the
// coverage once. Clients may record into one from parallel subtests (the
// engines of sqltest.Run run in parallel).
type Coverage struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Add records response as seen; a suite adds the ones another test
// exercises.
func (c *Coverage) Add(response string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[response] = true
}

// Has reports whether response was seen.
func (c *Coverage) Has(response string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[response]
}

// Len is the number of responses seen.
func (c *Coverage) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// Client sends requests in process to a handler wrapped by Wrap, so each
// exchange is validated against the document, fails the test on any
// status but the one wanted, and records in its Coverage which declared
// responses it saw.
type Client struct {
	t    TB
	h    http.Handler
	doc  *Document
	seen *Coverage
}

// NewClient returns a Client of h, judged by doc, recording into cov (a
// new Coverage when nil). It fails t when doc does not load.
func NewClient(t TB, doc []byte, h http.Handler, cov *Coverage) *Client {
	t.Helper()
	d := mustLoad(t, doc)
	if cov == nil {
		cov = &Coverage{}
	}
	return &Client{t: t, h: Wrap(t, doc, h), doc: d, seen: cov}
}

// Coverage returns the set the client records into.
func (c *Client) Coverage() *Coverage { return c.seen }

// Option changes a request a Client is about to send.
type Option func(r *http.Request)

// Bearer sends token in the Authorization header.
func Bearer(token string) Option {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// Header sets the request header k to v.
func Header(k, v string) Option { return func(r *http.Request) { r.Header.Set(k, v) } }

// Do sends body (as application/json unless an option sets another
// Content-Type; no body when "") and fails the test unless the answer has
// status. It records the route and status it saw and returns the answer.
func (c *Client) Do(method, path, body string, status int, opts ...Option) *httptest.ResponseRecorder {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(r)
	}
	route := "UNMATCHED"
	if c.doc != nil {
		if rt, ok := c.doc.Route(r); ok {
			route = rt
		}
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	if w.Code != status {
		c.t.Fatalf("%s %s = %d, want %d: %s", method, path, w.Code, status, w.Body)
		return w
	}
	c.seen.Add(route + " " + strconv.Itoa(w.Code))
	return w
}

// Code sends like Do and also fails the test unless the answer's error
// code (see ErrorCode) is code.
func (c *Client) Code(method, path, body string, status int, code string, opts ...Option) *httptest.ResponseRecorder {
	c.t.Helper()
	w := c.Do(method, path, body, status, opts...)
	if got := ErrorCode(w.Body.Bytes()); got != code {
		c.t.Fatalf("%s %s: code = %q, want %q (%s)", method, path, got, code, w.Body)
	}
	return w
}

// JSON sends like Do and decodes the answer into dst, failing the test
// when it is not JSON that fits.
func (c *Client) JSON(method, path, body string, status int, dst any, opts ...Option) {
	c.t.Helper()
	w := c.Do(method, path, body, status, opts...)
	if err := json.Unmarshal(w.Body.Bytes(), dst); err != nil {
		c.t.Fatalf("%s %s: %v (%s)", method, path, err, w.Body)
	}
}

// Missed returns, sorted, the responses the document declares that no
// client recording into this client's Coverage has seen.
func (c *Client) Missed() []string {
	if c.doc == nil {
		return nil
	}
	var missed []string
	for _, r := range c.doc.Responses() {
		if !c.seen.Has(r) {
			missed = append(missed, r)
		}
	}
	return missed
}

// CheckCoverage fails the test when the document declares a response no
// request produced (see Missed), naming each one.
func (c *Client) CheckCoverage() {
	c.t.Helper()
	if missed := c.Missed(); len(missed) > 0 {
		c.t.Errorf("declared responses no request produced (exercise them, or remove them from the document):\n\t%s", strings.Join(missed, "\n\t"))
	}
}

// ErrorCode returns the code of an error answer in either envelope the
// services use: box's {"error":{"code","message"}} or identity's
// problem+json "code". It is "" when body carries neither. Which envelope
// a service must use is the document's to judge, not this reader's.
func ErrorCode(body []byte) string {
	var v struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	if v.Error.Code != "" {
		return v.Error.Code
	}
	return v.Code
}

// Recorder is a TB that keeps what is reported to it instead of failing
// a test, to show that a check does report. Fatalf records the message
// and panics, since its caller expects not to return.
type Recorder struct {
	mu   sync.Mutex
	msgs []string
}

var _ TB = (*Recorder)(nil)

// Helper does nothing.
func (r *Recorder) Helper() {}

// Errorf records the message.
func (r *Recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

// Fatalf records the message and panics with it.
func (r *Recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(fmt.Sprintf(format, args...))
}

// Messages returns the messages recorded so far, oldest first.
func (r *Recorder) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// String returns the messages recorded so far, one a line.
func (r *Recorder) String() string { return strings.Join(r.Messages(), "\n") }

// ExpectReport serves r through h wrapped by Wrap for doc and fails t
// unless the wrapper reported a problem mentioning want; with want ""
// it fails t if the wrapper reported anything. A suite uses it to show
// that the wrapper catches each kind of drift between its handlers and
// its document, and passes an answer that conforms.
func ExpectReport(t TB, doc []byte, h http.Handler, r *http.Request, want string) {
	t.Helper()
	rec := &Recorder{}
	req := r.Method + " " + r.URL.RequestURI()
	Wrap(rec, doc, h).ServeHTTP(httptest.NewRecorder(), r)
	got := rec.String()
	switch {
	case want == "" && got != "":
		t.Errorf("%s: a conforming answer was reported:\n%s", req, got)
	case want != "" && got == "":
		t.Errorf("%s: the wrapper reported nothing; want a report mentioning %q", req, want)
	case !strings.Contains(got, want):
		t.Errorf("%s: report does not mention %q:\n%s", req, want, got)
	}
}
