package gateway

import (
	"net/http"

	"github.com/platformco/platform/internal/errs"
)

// MaxHeaderBytes is the most request-header bytes the gateway accepts. The
// server's own limit (ServerMaxHeaderBytes) is set above it, because the
// server answers a request over its limit itself, in text/plain; under it
// the gateway answers 431 in the route's envelope.
const (
	MaxHeaderBytes       = 64 << 10
	ServerMaxHeaderBytes = 1 << 20
)

// limitHeaders answers a request whose header is over MaxHeaderBytes with
// 431 in the envelope of the route it was meant for, and closes the
// connection.
func (g *Gateway) limitHeaders(mux *http.ServeMux) http.Handler {
	envOf := make(map[string]envelope)
	for _, rt := range Routes() {
		envOf[rt.Pattern] = rt.env
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) <= MaxHeaderBytes {
			mux.ServeHTTP(w, r)
			return
		}
		env := edgeEnvelope
		if _, pattern := mux.Handler(r); pattern != "" {
			if e, ok := envOf[pattern]; ok {
				env = e
			}
		}
		w.Header().Set("Connection", "close")
		writeErrorIn(w, r, g.log, env, errs.New(CodeHeadersTooLarge, "the request's header fields are over 64 KiB"))
	})
}

// headerBytes is the size of r's request line and header as the server
// counts it, near enough: each field's name, value and separators.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len(r.Host) + 8
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}
