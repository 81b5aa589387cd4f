package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// consentClient registers a client that may ask for openid, email and
// profile, and returns it with its owner (the user who consents).
func consentClient(t *testing.T, env *identitytest.Env) (identity.OIDCClient, identity.Principal) {
	t.Helper()
	owner := env.User(t, "owner@example.com")
	admin := env.Team(t, owner, "Acme")
	c, _, err := identity.RegisterOIDCClient(context.Background(), env.Store, admin, identity.RegisterOIDCClientInput{
		Name: "Shop", RedirectURIs: []string{"https://shop.example/cb"}, Scopes: []string{"openid", "email", "profile"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, owner
}

// newRequest stores an authorization request of c for scopes.
func newRequest(t *testing.T, env *identitytest.Env, c identity.OIDCClient, scopes ...string) identity.OIDCAuthRequest {
	t.Helper()
	req := identity.OIDCAuthRequest{ID: uuid.NewString(), ClientID: c.ID, RedirectURI: "https://shop.example/cb", Scopes: scopes, ResponseType: "code"}
	if err := env.Store.CreateOIDCAuthRequest(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return req
}

// consent signs p in for a new request of c for scopes and allows it on
// the consent page.
func consent(t *testing.T, env *identitytest.Env, c identity.OIDCClient, p identity.Principal, scopes ...string) identity.OIDCAuthRequest {
	t.Helper()
	ctx := context.Background()
	req := newRequest(t, env, c, scopes...)
	if err := env.Store.SignInOIDCAuthRequest(ctx, req.ID, p.User.ID, p.SessionID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.ConsentOIDCAuthRequest(ctx, req.ID, p.User.ID); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestOIDCConsentGrantedOnceUnderRace: concurrent consents of one user to
// one client, for different scopes, leave one row holding every scope.
func TestOIDCConsentGrantedOnceUnderRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env := identitytest.New(t, engine, identitytest.Config{})
		c, owner := consentClient(t, env)
		const grants = 20
		reqs := make([]identity.OIDCAuthRequest, grants)
		for i := range reqs {
			scopes := []string{"openid", "email"}
			if i%2 == 1 {
				scopes = []string{"openid", "profile"}
			}
			reqs[i] = newRequest(t, env, c, scopes...)
			if err := env.Store.SignInOIDCAuthRequest(ctx, reqs[i].ID, owner.User.ID, owner.SessionID, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		codes, unexpected := race(grants, func(i int) error {
			return env.Store.ConsentOIDCAuthRequest(ctx, reqs[i].ID, owner.User.ID)
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != grants {
			t.Errorf("consents: got %v, want all %d to succeed", codes, grants)
		}
		if n := env.Count(t, "oidc_consents"); n != 1 {
			t.Errorf("consent rows: got %d, want 1", n)
		}
		k, err := env.Store.OIDCConsent(ctx, owner.User.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(k.Scopes)
		if want := []string{"email", "openid", "profile"}; !slices.Equal(k.Scopes, want) {
			t.Errorf("consented scopes: got %v, want %v", k.Scopes, want)
		}
	})
}

// TestOIDCConsentRemembered: a request is resumed without a page only on
// a consent covering its scopes; consent grows with later grants.
func TestOIDCConsentRemembered(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env := identitytest.New(t, engine, identitytest.Config{})
		c, owner := consentClient(t, env)
		resume := func(scopes ...string) error {
			req := newRequest(t, env, c, scopes...)
			return env.Store.ResumeOIDCAuthRequest(ctx, req.ID, owner.User.ID, owner.SessionID, time.Now())
		}
		if err := resume("openid"); !errors.Is(err, identity.ErrOIDCConsentRequired) {
			t.Errorf("resume without a consent: got %v, want ErrOIDCConsentRequired", err)
		}
		consent(t, env, c, owner, "openid", "email")
		if err := resume("openid"); err != nil {
			t.Errorf("resume for scopes the consent covers: %v", err)
		}
		if err := resume("openid", "profile"); !errors.Is(err, identity.ErrOIDCConsentRequired) {
			t.Errorf("resume for a scope never allowed: got %v, want ErrOIDCConsentRequired", err)
		}
		first, err := env.Store.OIDCConsent(ctx, owner.User.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		consent(t, env, c, owner, "openid", "profile")
		if err := resume("openid", "email", "profile"); err != nil {
			t.Errorf("resume after the consent grew: %v", err)
		}
		k, err := env.Store.OIDCConsent(ctx, owner.User.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !k.GrantedAt.Equal(first.GrantedAt) || k.UpdatedAt.Before(first.UpdatedAt) || len(k.Scopes) != 3 {
			t.Errorf("consent after growing: got %+v, want granted_at %v kept and three scopes", k, first.GrantedAt)
		}
		// A request already answered is not resumed again.
		req := newRequest(t, env, c, "openid")
		if err := env.Store.ResumeOIDCAuthRequest(ctx, req.ID, owner.User.ID, owner.SessionID, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.ResumeOIDCAuthRequest(ctx, req.ID, owner.User.ID, owner.SessionID, time.Now()); !errors.Is(err, identity.ErrOIDCGrantUnknown) {
			t.Errorf("a second resume of one request: got %v, want ErrOIDCGrantUnknown", err)
		}
		list, err := env.Store.ListOIDCConsents(ctx, owner.User.ID)
		if err != nil || len(list) != 1 || list[0].ClientName != "Shop" {
			t.Errorf("ListOIDCConsents = %+v, %v; want the one client", list, err)
		}
		other := env.User(t, "other@example.com")
		if list, err := env.Store.ListOIDCConsents(ctx, other.User.ID); err != nil || len(list) != 0 {
			t.Errorf("another user's consents = %+v, %v; want none", list, err)
		}
	})
}

// TestOIDCConsentWithdrawn: withdrawing forgets the consent, revokes the
// user's tokens for the client and stops a code not yet redeemed; the
// other users' grants stay.
func TestOIDCConsentWithdrawn(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env := identitytest.New(t, engine, identitytest.Config{})
		c, owner := consentClient(t, env)
		other := env.User(t, "other@example.com")
		redeemed := consent(t, env, c, owner, "openid")
		pending := consent(t, env, c, owner, "openid")
		kept := consent(t, env, c, other, "openid")
		for _, req := range []identity.OIDCAuthRequest{redeemed, pending, kept} {
			_, digest := identity.NewSecret()
			if err := env.Store.SaveOIDCCode(ctx, req.ID, digest); err != nil {
				t.Fatal(err)
			}
		}
		for _, req := range []identity.OIDCAuthRequest{redeemed, kept} {
			p := owner
			if req.ID == kept.ID {
				p = other
			}
			access, refresh, d := codeTokens(c, p, req)
			if err := env.Store.RedeemOIDCCode(ctx, req.ID, access, refresh, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Store.WithdrawOIDCConsent(ctx, owner.User.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		if n := liveTokens(t, env, redeemed.ID); n != 0 {
			t.Errorf("the user's live tokens after withdrawing: got %d, want 0", n)
		}
		if n := liveTokens(t, env, kept.ID); n != 2 {
			t.Errorf("another user's live tokens: got %d, want 2", n)
		}
		access, refresh, d := codeTokens(c, owner, pending)
		if err := env.Store.RedeemOIDCCode(ctx, pending.ID, access, refresh, d); !errors.Is(err, identity.ErrOIDCGrantUnknown) {
			t.Errorf("redeeming a code issued before the withdrawal: got %v, want ErrOIDCGrantUnknown", err)
		}
		if _, err := env.Store.OIDCConsent(ctx, owner.User.ID, c.ID); !errors.Is(err, identity.ErrOIDCConsentNotFound) {
			t.Errorf("the consent after withdrawing: got %v, want ErrOIDCConsentNotFound", err)
		}
		if err := env.Store.WithdrawOIDCConsent(ctx, owner.User.ID, c.ID); !errors.Is(err, identity.ErrOIDCConsentNotFound) {
			t.Errorf("withdrawing twice: got %v, want ErrOIDCConsentNotFound", err)
		}
		if err := env.Store.WithdrawOIDCConsent(ctx, owner.User.ID, "not-a-uuid"); !errors.Is(err, identity.ErrOIDCConsentNotFound) {
			t.Errorf("withdrawing a malformed id: got %v, want ErrOIDCConsentNotFound", err)
		}
	})
}

// TestOIDCConsentForgottenWithClient: deleting a client forgets every
// consent to it, in the transaction that revokes its tokens.
func TestOIDCConsentForgottenWithClient(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env := identitytest.New(t, engine, identitytest.Config{})
		c, owner := consentClient(t, env)
		consent(t, env, c, owner, "openid")
		consent(t, env, c, env.User(t, "other@example.com"), "openid", "email")
		if n := env.Count(t, "oidc_consents"); n != 2 {
			t.Fatalf("consent rows: got %d, want 2", n)
		}
		if err := identity.RevokeOIDCClient(ctx, env.Store, env.For(t, owner, c.AccountID), c.ID); err != nil {
			t.Fatal(err)
		}
		if n := env.Count(t, "oidc_consents"); n != 0 {
			t.Errorf("consent rows after the client's deletion: got %d, want 0", n)
		}
		if list, err := env.Store.ListOIDCConsents(ctx, owner.User.ID); err != nil || len(list) != 0 {
			t.Errorf("ListOIDCConsents after the client's deletion = %+v, %v; want none", list, err)
		}
	})
}

// TestOIDCConsentOneRowPerUserAndClient: the database refuses a second
// row for one user and client, and one naming no client.
func TestOIDCConsentOneRowPerUserAndClient(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env := identitytest.New(t, engine, identitytest.Config{})
		c, owner := consentClient(t, env)
		consent(t, env, c, owner, "openid")
		const insert = `INSERT INTO oidc_consents (user_id, client_id, scopes, granted_at, updated_at) VALUES ($1, $2, '[]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`
		for name, client := range map[string]string{"Duplicate": c.ID, "NoClient": uuid.NewString()} {
			if _, err := env.DB.Exec(ctx, insert, owner.User.ID, client); err == nil {
				t.Errorf("%s: got no error, want the database to refuse", name)
			}
		}
	})
}
