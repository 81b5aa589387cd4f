package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity/client"
)

// Identity adapts identity's client to billing.Identity.
type Identity struct{ c *client.Client }

var _ billing.Identity = Identity{}

// NewIdentity returns identity's client answering in billing's codes; an
// empty baseURL makes every check answer unavailable (fail closed).
func NewIdentity(baseURL string, timeout time.Duration, logger *slog.Logger) Identity {
	return Identity{c: client.New(client.Options{
		BaseURL: baseURL, Timeout: timeout, Logger: logger,
		Errors: client.Errors{
			Unauthenticated: errs.New(billing.CodeUnauthenticated, "valid bearer token required"),
			Forbidden:       errs.New(billing.CodeForbidden, "platform staff only"),
			NotFound:        errs.New(billing.CodeNotFound, "not found"),
			Unavailable:     errs.New(billing.CodeUnavailable, "authorization service unavailable"),
		},
	})}
}

// Close releases idle connections.
func (i Identity) Close() { i.c.Close() }

// OperatorMe implements billing.Identity.
func (i Identity) OperatorMe(ctx context.Context, token string) (string, error) {
	return i.c.OperatorMe(ctx, token)
}

// Account implements billing.Identity.
func (i Identity) Account(ctx context.Context, token, accountID string) (billing.Account, error) {
	a, err := i.c.Account(ctx, token, accountID)
	return billing.Account{ID: a.ID, Role: a.Role, Personal: a.Personal}, err
}

// Me implements billing.Identity.
func (i Identity) Me(ctx context.Context, token string) (billing.User, error) {
	u, err := i.c.Me(ctx, token)
	return billing.User{ID: u.ID, Email: u.Email}, err
}

// bearer is the request's bearer token, "" when it has none.
func bearer(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}
