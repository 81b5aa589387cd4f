package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity/client"
	"github.com/platformco/platform/internal/keyholder"
)

// Identity is what keyholder asks identity (identity's client implements
// it): the caller's role in an account, with an API key's scopes, and
// whether the caller is staff. Errors are keyholder's: unauthenticated,
// not_found, forbidden, unavailable.
type Identity interface {
	AccountRole(ctx context.Context, token, accountID string) (string, []string, error)
	OperatorMe(ctx context.Context, token string) (string, error)
}

var _ Identity = (*client.Client)(nil)

// NewIdentity returns identity's client answering in keyholder's codes.
// An empty baseURL makes every check answer unavailable.
func NewIdentity(baseURL string, timeout time.Duration, logger *slog.Logger) *client.Client {
	return client.New(client.Options{
		BaseURL: baseURL,
		Timeout: timeout,
		Logger:  logger,
		Errors: client.Errors{
			Unauthenticated: errs.New(keyholder.CodeUnauthenticated, "valid bearer token required"),
			Forbidden:       errs.New(keyholder.CodeForbidden, "platform staff only"),
			NotFound:        errs.New(keyholder.CodeNotFound, "not found"),
			Unavailable:     errs.New(keyholder.CodeUnavailable, "authorization service unavailable"),
		},
	})
}

// bearer is the request's bearer token, "" when it has none.
func bearer(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}

var (
	errNoToken       = errs.New(keyholder.CodeUnauthenticated, "valid bearer token required")
	errNoIdentity    = errs.New(keyholder.CodeUnavailable, "authorization service unavailable")
	errNoSuchAccount = errs.New(keyholder.CodeNotFound, "not found")
)

// member resolves the caller to a member of accountID: unauthenticated
// without a token, not_found for a malformed id (identity is not asked)
// or a non-member, unavailable when identity cannot answer.
func (h *handlers) member(r *http.Request, accountID string) (keyholder.Member, error) {
	token := bearer(r)
	switch {
	case token == "":
		return keyholder.Member{}, errNoToken
	case !keyholder.ValidAccountID(accountID):
		return keyholder.Member{}, errNoSuchAccount
	case h.identity == nil:
		return keyholder.Member{}, errNoIdentity
	}
	role, scopes, err := h.identity.AccountRole(r.Context(), token, accountID)
	if err != nil {
		return keyholder.Member{}, err
	}
	return keyholder.Member{AccountID: accountID, Role: role, Scopes: scopes}, nil
}

// staff resolves the caller to platform staff: unauthenticated, forbidden,
// unavailable.
func (h *handlers) staff(r *http.Request) (keyholder.Staff, error) {
	token := bearer(r)
	switch {
	case token == "":
		return keyholder.Staff{}, errNoToken
	case h.identity == nil:
		return keyholder.Staff{}, errNoIdentity
	}
	id, err := h.identity.OperatorMe(r.Context(), token)
	if err != nil {
		return keyholder.Staff{}, err
	}
	return keyholder.Staff{UserID: id}, nil
}
