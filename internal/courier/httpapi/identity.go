package httpapi

import (
	"context"
	"net/http"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
)

// Identity resolves a caller's bearer token (courier/identityclient
// implements it over internal/tokens and identity's client). Errors are
// courier's: unauthorized, not_found, unavailable.
type Identity interface {
	// User verifies token and returns its user.
	User(ctx context.Context, token string) (courier.User, error)
	// AccountRole returns the token's user's role in accountID.
	AccountRole(ctx context.Context, token, accountID string) (string, error)
}

var (
	errNoToken    = errs.New(courier.CodeUnauthorized, "a valid identity access token is required")
	errNoIdentity = errs.New(courier.CodeUnavailable, "the identity service is unavailable; try again shortly")
	errNoAccount  = errs.New(courier.CodeNotFound, "no such account")
)

// user resolves the caller to a signed-in user: unauthorized without a
// token or with one identity refuses, unavailable when it cannot tell.
func (h *handlers) user(ctx context.Context, r *http.Request) (courier.User, error) {
	token := userToken(r)
	switch {
	case token == "":
		return courier.User{}, errNoToken
	case h.identity == nil:
		return courier.User{}, errNoIdentity
	}
	return h.identity.User(ctx, token)
}

// member resolves the caller to a member of the path's account:
// unauthorized, not_found for a malformed id (identity is not asked) or a
// non-member, unavailable.
func (h *handlers) member(ctx context.Context, r *http.Request) (courier.Member, error) {
	token, accountID := userToken(r), r.PathValue("account_id")
	switch {
	case token == "":
		return courier.Member{}, errNoToken
	case !courier.ValidAccountID(accountID):
		return courier.Member{}, errNoAccount
	case h.identity == nil:
		return courier.Member{}, errNoIdentity
	}
	role, err := h.identity.AccountRole(ctx, token, accountID)
	if err != nil {
		return courier.Member{}, err
	}
	return courier.Member{AccountID: accountID, Role: role}, nil
}
