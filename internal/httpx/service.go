package httpx

import (
	"log/slog"
	"net/http"
	"sync/atomic"
)

// ErrorWriter writes a refusal in a service's envelope (problem+json for
// identity, {error:{code,message}} for box).
type ErrorWriter func(w http.ResponseWriter, r *http.Request, status int, code, message string)

// The codes of the refusals Finish answers for every service.
const (
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeHeadersTooLarge  = "request_headers_too_large"
	CodeInternal         = "internal"
	CodeUnavailable      = "unavailable"
)

// MaxHeaderBytes bounds a request's header block (its request line and
// header fields). Past it a service answers 431 in its envelope; the
// server itself reads up to serverHeaderBytes, so only a block beyond that
// gets net/http's own text/plain 431.
const MaxHeaderBytes = 64 << 10

const serverHeaderBytes = 1 << 20

// methods are those a path may be registered under, for the Allow header.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// Finish turns a service's routes into its handler: what mux matches is
// served; a path it knows under other methods is 405 with Allow, any other
// 404; a header block over MaxHeaderBytes is 431; a panic is a logged 500;
// every request is logged (Observe). Each refusal is written by write, in
// the service's envelope. mux must not route "/" itself.
func Finish(mux *http.ServeMux, logger *slog.Logger, write ErrorWriter) http.Handler {
	mux.Handle("/", fallback(mux, write))
	internal := func(w http.ResponseWriter, r *http.Request) {
		write(w, r, http.StatusInternalServerError, CodeInternal, "an internal error occurred; it has been logged")
	}
	return Chain(RecordRoute(mux), Observe(logger, internal), limitHeaders(write))
}

func fallback(mux *http.ServeMux, write ErrorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := ""
		for _, m := range methods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
				if allowed != "" {
					allowed += ", "
				}
				allowed += m
				if m == http.MethodGet {
					allowed += ", " + http.MethodHead
				}
			}
		}
		if allowed != "" {
			w.Header().Set("Allow", allowed)
			write(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method "+r.Method+" is not allowed here; allowed: "+allowed)
			return
		}
		write(w, r, http.StatusNotFound, CodeNotFound, "no such resource")
	})
}

// limitHeaders answers 431 for a header block over MaxHeaderBytes.
func limitHeaders(write ErrorWriter) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + len(r.Host) + 4
			for k, vs := range r.Header {
				for _, v := range vs {
					n += len(k) + len(v) + 4 // ": " and CRLF
				}
			}
			if n > MaxHeaderBytes {
				w.Header().Set("Connection", "close")
				write(w, r, http.StatusRequestHeaderFieldsTooLarge, CodeHeadersTooLarge, "request headers must not exceed 64 KiB")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Switch serves one handler until Set replaces it: a service answers its
// probes (and 503 elsewhere) while its database is away, and serves every
// route once the database answers.
type Switch struct{ h atomic.Pointer[http.Handler] }

// NewSwitch returns a Switch serving h.
func NewSwitch(h http.Handler) *Switch {
	s := &Switch{}
	s.Set(h)
	return s
}

// Set makes h the handler of the requests that arrive from now on.
func (s *Switch) Set(h http.Handler) { s.h.Store(&h) }

func (s *Switch) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }
