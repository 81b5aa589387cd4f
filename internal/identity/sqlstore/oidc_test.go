package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// oidcGrant registers a client and signs a user in for a code, returning
// the environment, the client and the code's digest.
func oidcGrant(t *testing.T, engine sqldb.Engine) (*identitytest.Env, identity.OIDCClient, identity.Principal, string) {
	t.Helper()
	ctx := context.Background()
	env := identitytest.New(t, engine, identitytest.Config{})
	owner := env.User(t, "owner@example.com")
	admin := env.Team(t, owner, "Acme")
	c, _, err := identity.RegisterOIDCClient(ctx, env.Store, admin, identity.RegisterOIDCClientInput{
		Name: "Shop", RedirectURIs: []string{"https://shop.example/cb"}, GrantTypes: []string{"authorization_code", "refresh_token"},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := identity.OIDCAuthRequest{ID: uuid.NewString(), ClientID: c.ID, RedirectURI: "https://shop.example/cb", Scopes: []string{"openid"}, ResponseType: "code"}
	if err := env.Store.CreateOIDCAuthRequest(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SignInOIDCAuthRequest(ctx, req.ID, owner.User.ID, owner.SessionID); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.ConsentOIDCAuthRequest(ctx, req.ID, owner.User.ID); err != nil {
		t.Fatal(err)
	}
	_, digest := identity.NewSecret()
	if err := env.Store.SaveOIDCCode(ctx, req.ID, digest); err != nil {
		t.Fatal(err)
	}
	return env, c, admin, digest
}

func TestOIDCCodeRedeemedOnceUnderRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env, _, _, digest := oidcGrant(t, engine)
		codes, unexpected := race(racers, func(int) error {
			_, err := env.Store.RedeemOIDCCode(context.Background(), digest)
			return err
		})
		if len(unexpected) > 0 {
			t.Fatalf("unexpected errors: %v", unexpected)
		}
		if codes[""] != 1 || codes[identity.CodeUnauthorized] != racers-1 {
			t.Errorf("redemptions: got %v, want exactly one success", codes)
		}
	})
}

func TestOIDCRefreshRotatedOnceUnderRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env, c, admin, digest := oidcGrant(t, engine)
		req, err := env.Store.RedeemOIDCCode(ctx, digest)
		if err != nil {
			t.Fatal(err)
		}
		token := func(kind, family string) identity.OIDCToken {
			return identity.OIDCToken{ID: uuid.NewString(), Kind: kind, ClientID: c.ID, UserID: admin.User.ID, FamilyID: family, AuthRequestID: req.ID,
				Scopes: []string{"openid"}, AuthTime: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		}
		family := uuid.NewString()
		first := token("refresh", family)
		_, firstDigest := identity.NewSecret()
		if err := env.Store.IssueOIDCTokens(ctx, token("access", family), &first, firstDigest, ""); err != nil {
			t.Fatal(err)
		}
		codes, unexpected := race(racers, func(int) error {
			next := token("refresh", family)
			_, d := identity.NewSecret()
			return env.Store.IssueOIDCTokens(ctx, token("access", family), &next, d, firstDigest)
		})
		if len(unexpected) > 0 {
			t.Fatalf("unexpected errors: %v", unexpected)
		}
		if codes[""] != 1 || codes[identity.CodeUnauthorized] != racers-1 {
			t.Errorf("rotations: got %v, want exactly one success", codes)
		}
		// The losers were reuses: the whole family is revoked.
		var live int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM oidc_tokens WHERE family_id = $1 AND revoked_at IS NULL`, family).Scan(&live); err != nil || live != 0 {
			t.Errorf("live tokens of the raced family: got %d (%v), want 0", live, err)
		}
	})
}

// TestOIDCTablesRefuseInconsistentRows: the invariants hold for every
// connection, not only the store's code.
func TestOIDCTablesRefuseInconsistentRows(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env, c, admin, _ := oidcGrant(t, engine)
		tests := []struct{ name, sql string }{
			{"PublicClientWithSecret", `UPDATE oidc_clients SET public = TRUE WHERE id = '` + c.ID + `'`},
			{"ConfidentialClientWithoutSecret", `UPDATE oidc_clients SET secret_digest = NULL WHERE id = '` + c.ID + `'`},
			{"CodeBeforeConsent", `UPDATE oidc_auth_requests SET done = FALSE`},
			{"AccessTokenWithDigest", `INSERT INTO oidc_tokens (id, kind, client_id, user_id, family_id, digest, scopes, auth_time, created_at, expires_at)
				VALUES ('` + uuid.NewString() + `', 'access', '` + c.ID + `', '` + admin.User.ID + `', '` + uuid.NewString() + `', 'd', '[]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`},
			{"UnknownKind", `INSERT INTO oidc_tokens (id, kind, client_id, user_id, family_id, scopes, auth_time, created_at, expires_at)
				VALUES ('` + uuid.NewString() + `', 'id', '` + c.ID + `', '` + admin.User.ID + `', '` + uuid.NewString() + `', '[]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := env.DB.Exec(ctx, tt.sql); err == nil {
					t.Errorf("got no error, want the database to refuse")
				}
			})
		}
		if _, err := env.Store.RedeemOIDCCode(ctx, "no such digest"); !errors.Is(err, identity.ErrOIDCGrantUnknown) {
			t.Errorf("unknown code: got %v, want ErrOIDCGrantUnknown", err)
		}
	})
}

// TestOIDCForeignKeysHoldWithForeignKeysOff: on SQLite a connection with
// foreign keys off (the sqlite3 shell) still cannot orphan OIDC rows, and
// deleting a user cascades to their grants.
func TestOIDCForeignKeysHoldWithForeignKeysOff(t *testing.T) {
	env, c, admin, _ := oidcGrant(t, sqldb.SQLite)
	raw := sqltest.RawSQLite(t, env.DB)
	if _, err := raw.Exec(`INSERT INTO oidc_tokens (id, kind, client_id, user_id, family_id, scopes, auth_time, created_at, expires_at)
		VALUES (?, 'access', ?, ?, ?, '[]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`, uuid.NewString(), uuid.NewString(), admin.User.ID, uuid.NewString()); err == nil {
		t.Errorf("a token naming no client: got no error")
	}
	if _, err := raw.Exec(`INSERT INTO oidc_clients (id, account_id, name, secret_digest, public, redirect_uris, grant_types, scopes, created_by, created_at)
		VALUES (?, ?, 'x', 'd', 0, '[]', '[]', '[]', ?, CURRENT_TIMESTAMP)`, uuid.NewString(), uuid.NewString(), admin.User.ID); err == nil {
		t.Errorf("a client naming no account: got no error")
	}
	if _, err := raw.Exec(`DELETE FROM accounts WHERE id = ?`, c.AccountID); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := raw.QueryRow(`SELECT (SELECT count(*) FROM oidc_clients) + (SELECT count(*) FROM oidc_auth_requests)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows left after the account's deletion: got %d (%v), want 0", n, err)
	}
	sqltest.WantNoDanglingReferences(t, raw)
}

// TestOIDCCodeReusedBeforeIssuanceIssuesNothing: a second use of a code
// that lands between the first use's redemption and its issuance leaves
// the first use nothing to issue.
func TestOIDCCodeReusedBeforeIssuanceIssuesNothing(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env, c, admin, digest := oidcGrant(t, engine)
		req, err := env.Store.RedeemOIDCCode(ctx, digest)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Store.RedeemOIDCCode(ctx, digest); !errors.Is(err, identity.ErrOIDCGrantReused) {
			t.Fatalf("second redemption: got %v, want ErrOIDCGrantReused", err)
		}
		access := identity.OIDCToken{ID: uuid.NewString(), Kind: "access", ClientID: c.ID, UserID: admin.User.ID, FamilyID: uuid.NewString(), AuthRequestID: req.ID,
			Scopes: []string{"openid"}, AuthTime: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		if err := env.Store.IssueOIDCTokens(ctx, access, nil, "", ""); !errors.Is(err, identity.ErrOIDCGrantUnknown) {
			t.Errorf("issuance after reuse: got %v, want ErrOIDCGrantUnknown", err)
		}
	})
}
