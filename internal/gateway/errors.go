package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/tokens"
)

// The gateway's error codes. The edge's own routes (/auth/*, the probes,
// an unknown path) answer them as problem+json as they are; on a proxied
// route each is rendered in that route's service contract by the table of
// its envelope (operations.md section 8). Errors from an upstream pass
// through untouched.
const (
	CodeTokenRequired           = "token_required"            // 401: no bearer token and no session cookie
	CodeInvalidToken            = tokens.CodeInvalidToken     // 401: bad signature, wrong issuer, expired, unknown key, wrong alg
	CodeNotAuthenticated        = "not_authenticated"         // 401: no live browser session
	CodeOriginRefused           = "origin_refused"            // 403: cookie-authenticated state change from another origin
	CodeNotFound                = "not_found"                 // 404: no such route
	CodeUpstreamNotConfigured   = "upstream_not_configured"   // 404: the route's upstream URL is not set
	CodeMethodNotAllowed        = "method_not_allowed"        // 405
	CodeRateLimited             = "rate_limited"              // 429
	CodeHeadersTooLarge         = "headers_too_large"         // 431: the request's header is over the edge's limit
	CodeInternal                = "internal"                  // 500
	CodeUnavailable             = "unavailable"               // 503: the upstream could not be reached or answered nonsense
	CodeIdentityUnavailable     = tokens.CodeKeysUnavailable  // 503: identity's key set is not loaded or expired
	CodeSessionStoreUnavailable = "session_store_unavailable" // 503: Redis unreachable for a browser session
)

// envelope is the error contract of the service behind a route.
type envelope int

const (
	// edgeEnvelope is the gateway's own: problem+json with its own codes.
	edgeEnvelope envelope = iota
	// problemEnvelope is identity's (and every service that follows it):
	// problem+json with the service's codes.
	problemEnvelope
	// boxEnvelope is box's {error: {code, message}}.
	boxEnvelope
	// ociEnvelope is the OCI Distribution API's {errors: [{code, message}]},
	// spoken by keyholder's /v2.
	ociEnvelope
)

// answer is how one gateway code is rendered in one envelope.
type answer struct {
	status int
	code   string
}

// answers is the one table from the gateway's codes to statuses and codes,
// per envelope. A code missing from an envelope's table is a programming
// error, answered as internal.
var answers = map[envelope]map[string]answer{
	edgeEnvelope: {
		CodeTokenRequired:           {http.StatusUnauthorized, CodeTokenRequired},
		CodeInvalidToken:            {http.StatusUnauthorized, CodeInvalidToken},
		CodeNotAuthenticated:        {http.StatusUnauthorized, CodeNotAuthenticated},
		CodeOriginRefused:           {http.StatusForbidden, CodeOriginRefused},
		CodeNotFound:                {http.StatusNotFound, CodeNotFound},
		CodeUpstreamNotConfigured:   {http.StatusNotFound, CodeUpstreamNotConfigured},
		CodeMethodNotAllowed:        {http.StatusMethodNotAllowed, CodeMethodNotAllowed},
		CodeRateLimited:             {http.StatusTooManyRequests, CodeRateLimited},
		CodeHeadersTooLarge:         {http.StatusRequestHeaderFieldsTooLarge, CodeHeadersTooLarge},
		CodeInternal:                {http.StatusInternalServerError, CodeInternal},
		CodeUnavailable:             {http.StatusServiceUnavailable, CodeUnavailable},
		CodeIdentityUnavailable:     {http.StatusServiceUnavailable, CodeIdentityUnavailable},
		CodeSessionStoreUnavailable: {http.StatusServiceUnavailable, CodeSessionStoreUnavailable},
	},
	// identity.md section 7 and operations.md section 3.
	problemEnvelope: {
		CodeTokenRequired:           {http.StatusUnauthorized, "unauthorized"},
		CodeInvalidToken:            {http.StatusUnauthorized, "unauthorized"},
		CodeNotAuthenticated:        {http.StatusUnauthorized, "unauthorized"},
		CodeOriginRefused:           {http.StatusForbidden, "forbidden"},
		CodeNotFound:                {http.StatusNotFound, "not_found"},
		CodeUpstreamNotConfigured:   {http.StatusNotFound, "not_found"},
		CodeMethodNotAllowed:        {http.StatusMethodNotAllowed, "method_not_allowed"},
		CodeRateLimited:             {http.StatusTooManyRequests, "rate_limited"},
		CodeHeadersTooLarge:         {http.StatusRequestHeaderFieldsTooLarge, "headers_too_large"},
		CodeInternal:                {http.StatusInternalServerError, "internal"},
		CodeUnavailable:             {http.StatusServiceUnavailable, "unavailable"},
		CodeIdentityUnavailable:     {http.StatusServiceUnavailable, "unavailable"},
		CodeSessionStoreUnavailable: {http.StatusServiceUnavailable, "unavailable"},
	},
	// entitlements.md section 7.
	boxEnvelope: {
		CodeTokenRequired:           {http.StatusUnauthorized, "unauthenticated"},
		CodeInvalidToken:            {http.StatusUnauthorized, "unauthenticated"},
		CodeNotAuthenticated:        {http.StatusUnauthorized, "unauthenticated"},
		CodeOriginRefused:           {http.StatusForbidden, "forbidden"},
		CodeNotFound:                {http.StatusNotFound, "not_found"},
		CodeUpstreamNotConfigured:   {http.StatusNotFound, "not_found"},
		CodeMethodNotAllowed:        {http.StatusMethodNotAllowed, "method_not_allowed"},
		CodeRateLimited:             {http.StatusTooManyRequests, "rate_limited"},
		CodeHeadersTooLarge:         {http.StatusRequestHeaderFieldsTooLarge, "headers_too_large"},
		CodeInternal:                {http.StatusInternalServerError, "internal"},
		CodeUnavailable:             {http.StatusServiceUnavailable, "unavailable"},
		CodeIdentityUnavailable:     {http.StatusServiceUnavailable, "unavailable"},
		CodeSessionStoreUnavailable: {http.StatusServiceUnavailable, "unavailable"},
	},
	// The OCI Distribution specification's error codes.
	ociEnvelope: {
		CodeTokenRequired:           {http.StatusUnauthorized, "UNAUTHORIZED"},
		CodeInvalidToken:            {http.StatusUnauthorized, "UNAUTHORIZED"},
		CodeNotAuthenticated:        {http.StatusUnauthorized, "UNAUTHORIZED"},
		CodeOriginRefused:           {http.StatusForbidden, "DENIED"},
		CodeNotFound:                {http.StatusNotFound, "NAME_UNKNOWN"},
		CodeUpstreamNotConfigured:   {http.StatusNotFound, "NAME_UNKNOWN"},
		CodeMethodNotAllowed:        {http.StatusMethodNotAllowed, "UNSUPPORTED"},
		CodeRateLimited:             {http.StatusTooManyRequests, "TOOMANYREQUESTS"},
		CodeHeadersTooLarge:         {http.StatusRequestHeaderFieldsTooLarge, "UNSUPPORTED"},
		CodeInternal:                {http.StatusInternalServerError, "UNKNOWN"},
		CodeUnavailable:             {http.StatusServiceUnavailable, "UNAVAILABLE"},
		CodeIdentityUnavailable:     {http.StatusServiceUnavailable, "UNAVAILABLE"},
		CodeSessionStoreUnavailable: {http.StatusServiceUnavailable, "UNAVAILABLE"},
	},
}

// retryError is an outage the caller should retry after a while; the
// Retry-After header is written from it.
type retryError struct {
	err        *errs.Error
	retryAfter time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// writeError answers err in the gateway's own envelope.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	writeErrorIn(w, r, logger, edgeEnvelope, err)
}

// writeErrorIn answers err in env. An *errs.Error with a gateway code is
// answered as the envelope's table says; anything else is logged and
// answered as a generic 500. A 503 without a retryError's own delay says
// Retry-After: 1.
func writeErrorIn(w http.ResponseWriter, r *http.Request, logger *slog.Logger, env envelope, err error) {
	var re *retryError
	if errors.As(err, &re) {
		w.Header().Set("Retry-After", retrySeconds(re.retryAfter))
	} else if e, ok := errs.As(err); ok && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retrySeconds(e.RetryAfter))
	}
	a, msg := answer{http.StatusInternalServerError, ""}, "internal error"
	if e, ok := errs.As(err); ok {
		if known, ok := answers[env][e.Code]; ok {
			a, msg = known, e.Message
		}
	}
	if a.code == "" {
		logger.ErrorContext(r.Context(), "internal error", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
		a = answers[env][CodeInternal]
	}
	h := w.Header()
	if a.status == http.StatusUnauthorized && env != ociEnvelope && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", `Bearer realm="platform"`)
	}
	if env == boxEnvelope {
		if m, ok := boxMessages[a.code]; ok {
			msg = m
		}
	}
	if a.status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	switch env {
	case boxEnvelope:
		h.Set("Cache-Control", "no-store")
		httpx.WriteJSON(w, a.status, boxError{Error: boxErrorDetail{Code: a.code, Message: msg}})
	case ociEnvelope:
		httpx.WriteJSON(w, a.status, ociErrors{Errors: []ociError{{Code: a.code, Message: msg}}})
	default:
		httpx.WriteProblem(w, r, a.status, a.code, msg, nil)
	}
}

// boxMessages are box's own wording (box.MsgUnauthenticated,
// box.MsgNotFound) for the codes it shares with the edge, so a client sees
// one message per code whoever answered. The gateway imports no service;
// a test holds the copy to box's.
var boxMessages = map[string]string{
	"unauthenticated": "valid bearer token required",
	"not_found":       "not found",
}

// boxError is box's error envelope (entitlements.md section 7).
type boxError struct {
	Error boxErrorDetail `json:"error"`
}

type boxErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ociErrors is the OCI Distribution API's error body.
type ociErrors struct {
	Errors []ociError `json:"errors"`
}

type ociError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
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
