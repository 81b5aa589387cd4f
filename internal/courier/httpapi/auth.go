package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
)

// MinServiceSecret is the shortest secret COURIER_SERVICE_TOKENS accepts.
const MinServiceSecret = 32

// ServiceTokens are the platform services allowed to call courier's
// service routes: name → digest of the secret, so a comparison takes the
// same time whatever the presented secret's length.
type ServiceTokens map[string][sha256.Size]byte

// ParseServiceTokens reads COURIER_SERVICE_TOKENS: comma-separated
// name:secret pairs, secrets of at least MinServiceSecret characters. Its
// errors never repeat a secret.
func ParseServiceTokens(s string) (ServiceTokens, error) {
	out := ServiceTokens{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, item := range strings.Split(s, ",") {
		name, secret, ok := strings.Cut(strings.TrimSpace(item), ":")
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("entry %d must be name:secret", i+1)
		case strings.ContainsAny(name, " \t"):
			return nil, fmt.Errorf("entry %d: the name must have no spaces", i+1)
		case len(secret) < MinServiceSecret:
			return nil, fmt.Errorf("entry %d (%s): the secret must be at least %d characters", i+1, name, MinServiceSecret)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("entry %d: %s is named twice", i+1, name)
		}
		out[name] = sha256.Sum256([]byte(secret))
	}
	return out, nil
}

// caller returns the service a request's `Authorization: Bearer
// name:secret` names, or "" when the credential is missing or wrong.
func (t ServiceTokens) caller(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	name, secret, ok := strings.Cut(strings.TrimSpace(tok), ":")
	want, known := t[name]
	if !ok || !known {
		return ""
	}
	got := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return ""
	}
	return name
}

type callerKey struct{}

// requireService admits only requests with a service credential.
func (h *handlers) requireService(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := h.tokens.caller(r)
		if name == "" {
			fail(w, r, h.logger, errs.New(courier.CodeUnauthorized, "a platform service credential is required"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, name)))
	})
}

func callerOf(r *http.Request) string {
	name, _ := r.Context().Value(callerKey{}).(string)
	return name
}
