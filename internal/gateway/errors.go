package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

// The gateway's error codes. Every error the edge itself answers is
// application/problem+json with one of these codes; errors from an upstream
// pass through untouched.
const (
	CodeTokenRequired           = "token_required"            // 401: no bearer token and no session cookie
	CodeInvalidToken            = "invalid_token"             // 401: bad signature, wrong issuer, expired, unknown key, wrong alg
	CodeNotAuthenticated        = "not_authenticated"         // 401: no live browser session
	CodeOriginRefused           = "origin_refused"            // 403: cookie-authenticated state change from another origin
	CodeNotFound                = "not_found"                 // 404: no such route
	CodeUpstreamNotConfigured   = "upstream_not_configured"   // 404: the route's upstream URL is not set
	CodeMethodNotAllowed        = "method_not_allowed"        // 405
	CodeRateLimited             = "rate_limited"              // 429
	CodeInternal                = "internal"                  // 500
	CodeUpstreamUnavailable     = "upstream_unavailable"      // 502: the upstream could not be reached or answered nonsense
	CodeIdentityUnavailable     = "identity_unavailable"      // 503: identity's key set is not loaded or expired
	CodeSessionStoreUnavailable = "session_store_unavailable" // 503: Redis unreachable for a browser session
)

// statusOf is the one table from the gateway's codes to HTTP statuses.
var statusOf = map[string]int{
	CodeTokenRequired:           http.StatusUnauthorized,
	CodeInvalidToken:            http.StatusUnauthorized,
	CodeNotAuthenticated:        http.StatusUnauthorized,
	CodeOriginRefused:           http.StatusForbidden,
	CodeNotFound:                http.StatusNotFound,
	CodeUpstreamNotConfigured:   http.StatusNotFound,
	CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	CodeRateLimited:             http.StatusTooManyRequests,
	CodeInternal:                http.StatusInternalServerError,
	CodeUpstreamUnavailable:     http.StatusBadGateway,
	CodeIdentityUnavailable:     http.StatusServiceUnavailable,
	CodeSessionStoreUnavailable: http.StatusServiceUnavailable,
}

// retryError is an outage the caller should retry after a while; the
// Retry-After header is written from it.
type retryError struct {
	err        *errs.Error
	retryAfter time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// writeError answers err as problem+json. An *errs.Error with a gateway code
// is answered as itself; anything else is logged and answered as a generic
// 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var re *retryError
	if errors.As(err, &re) {
		w.Header().Set("Retry-After", retrySeconds(re.retryAfter))
	}
	if e, ok := errs.As(err); ok {
		if status, known := statusOf[e.Code]; known {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="platform"`)
			}
			httpx.WriteProblem(w, r, status, e.Code, e.Message, e.Fields)
			return
		}
	}
	logger.Error("internal error", "error", err.Error(), "method", r.Method, "path", r.URL.Path,
		"trace_id", httpx.TraceFrom(r.Context()).TraceID)
	httpx.WriteProblem(w, r, http.StatusInternalServerError, CodeInternal, "internal error", nil)
}

// retrySeconds renders d as a Retry-After value: whole seconds, rounded up,
// at least 1.
func retrySeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}
