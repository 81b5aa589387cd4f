package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
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
	if err := env.Store.SignInOIDCAuthRequest(ctx, req.ID, owner.User.ID, owner.SessionID, time.Now()); err != nil {
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

// codeTokens are the tokens an exchange of request req's code issues.
func codeTokens(c identity.OIDCClient, admin identity.Principal, req identity.OIDCAuthRequest) (identity.OIDCToken, *identity.OIDCToken, string) {
	family := uuid.NewString()
	access := identity.OIDCToken{ID: uuid.NewString(), Kind: "access", ClientID: c.ID, UserID: admin.User.ID, FamilyID: family, AuthRequestID: req.ID,
		Scopes: req.Scopes, AuthTime: req.AuthTime, ExpiresAt: time.Now().Add(time.Hour)}
	refresh := access
	refresh.ID, refresh.Kind = uuid.NewString(), "refresh"
	_, digest := identity.NewSecret()
	return access, &refresh, digest
}

// liveTokens counts the unrevoked tokens of request id's families.
func liveTokens(t *testing.T, env *identitytest.Env, id string) int {
	t.Helper()
	var n int
	if err := env.DB.QueryRow(context.Background(), `
		SELECT count(*) FROM oidc_tokens
		WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM oidc_tokens WHERE auth_request_id = $1)`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOIDCCodeRedeemedOnceUnderRace: of concurrent exchanges of one code
// (all of which read it while it was unused), exactly one issues; the
// others are second uses, which revoke what the first issued.
func TestOIDCCodeRedeemedOnceUnderRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env, c, admin, digest := oidcGrant(t, engine)
		const exchanges = 20
		reqs := make([]identity.OIDCAuthRequest, exchanges)
		for i := range reqs {
			r, _, _, err := env.Store.OIDCAuthRequestByCode(ctx, digest)
			if err != nil {
				t.Fatalf("read %d of an unused code: %v", i, err)
			}
			reqs[i] = r
		}
		codes, unexpected := race(exchanges, func(i int) error {
			access, refresh, d := codeTokens(c, admin, reqs[i])
			return env.Store.RedeemOIDCCode(ctx, reqs[i].ID, access, refresh, d)
		})
		if len(unexpected) > 0 {
			t.Fatalf("unexpected errors: %v", unexpected)
		}
		if codes[""] != 1 || codes[identity.CodeUnauthorized] != exchanges-1 {
			t.Errorf("exchanges: got %v, want exactly one success", codes)
		}
		var issued int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM oidc_tokens WHERE auth_request_id = $1`, reqs[0].ID).Scan(&issued); err != nil || issued != 2 {
			t.Errorf("tokens issued for the code: got %d (%v), want 2 (one access, one refresh)", issued, err)
		}
		if n := liveTokens(t, env, reqs[0].ID); n != 0 {
			t.Errorf("live tokens after the code's reuse: got %d, want 0", n)
		}
	})
}

// TestOIDCCodeExchange: the ways a code's exchange ends, one write each.
func TestOIDCCodeExchange(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		tests := []struct {
			name string
			// before runs between the read of the code and its redemption.
			before     func(env *identitytest.Env, c identity.OIDCClient, admin identity.Principal, req identity.OIDCAuthRequest, digest string) error
			wantRedeem error
			// wantRead is what a later read of the code answers.
			wantRead error
		}{
			{"Once", nil, nil, identity.ErrOIDCGrantReused},
			{"BurntByARefusedExchange", func(env *identitytest.Env, _ identity.OIDCClient, _ identity.Principal, req identity.OIDCAuthRequest, _ string) error {
				return env.Store.BurnOIDCCode(ctx, req.ID)
			}, identity.ErrOIDCGrantUnknown, identity.ErrOIDCGrantReused},
			// Another exchange issues and a third use revokes that, all
			// between this exchange's read and its redemption.
			{"ReusedBeforeIssuance", func(env *identitytest.Env, c identity.OIDCClient, admin identity.Principal, req identity.OIDCAuthRequest, digest string) error {
				access, refresh, d := codeTokens(c, admin, req)
				if err := env.Store.RedeemOIDCCode(ctx, req.ID, access, refresh, d); err != nil {
					return err
				}
				if _, _, _, err := env.Store.OIDCAuthRequestByCode(ctx, digest); !errors.Is(err, identity.ErrOIDCGrantReused) {
					return fmt.Errorf("third use: got %v, want ErrOIDCGrantReused", err)
				}
				return nil
			}, identity.ErrOIDCGrantUnknown, identity.ErrOIDCGrantReused},
			{"UserDisabled", func(env *identitytest.Env, _ identity.OIDCClient, admin identity.Principal, _ identity.OIDCAuthRequest, _ string) error {
				_, err := env.DB.Exec(ctx, `UPDATE users SET disabled_at = created_at WHERE id = $1`, admin.User.ID)
				return err
			}, identity.ErrOIDCGrantUnknown, nil},
			{"ClientRevoked", func(env *identitytest.Env, c identity.OIDCClient, admin identity.Principal, _ identity.OIDCAuthRequest, _ string) error {
				return env.Store.RevokeOIDCClient(ctx, c.AccountID, c.ID, admin.User.ID)
			}, identity.ErrOIDCGrantUnknown, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				env, c, admin, digest := oidcGrant(t, engine)
				req, rc, rcDigest, err := env.Store.OIDCAuthRequestByCode(ctx, digest)
				if err != nil {
					t.Fatal(err)
				}
				if rc.ID != c.ID || rc.Name != c.Name || rcDigest == "" {
					t.Fatalf("the code's client: got %+v (secret digest %q), want %s with its digest", rc, rcDigest, c.ID)
				}
				if tt.before != nil {
					if err := tt.before(env, c, admin, req, digest); err != nil {
						t.Fatal(err)
					}
				}
				access, refresh, d := codeTokens(c, admin, req)
				if err := env.Store.RedeemOIDCCode(ctx, req.ID, access, refresh, d); !errors.Is(err, tt.wantRedeem) {
					t.Fatalf("redemption: got %v, want %v", err, tt.wantRedeem)
				}
				if _, _, _, err := env.Store.OIDCAuthRequestByCode(ctx, digest); !errors.Is(err, tt.wantRead) {
					t.Errorf("a later read of the code: got %v, want %v", err, tt.wantRead)
				}
				if tt.wantRedeem == nil {
					// The later read was a second use.
					if n := liveTokens(t, env, req.ID); n != 0 {
						t.Errorf("live tokens after the second use: got %d, want 0", n)
					}
				}
			})
		}
		t.Run("UnknownCode", func(t *testing.T) {
			env, _, _, _ := oidcGrant(t, engine)
			if _, _, _, err := env.Store.OIDCAuthRequestByCode(ctx, "no such digest"); !errors.Is(err, identity.ErrOIDCGrantUnknown) {
				t.Errorf("got %v, want ErrOIDCGrantUnknown", err)
			}
		})
	})
}

func TestOIDCRefreshRotatedOnceUnderRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env, c, admin, digest := oidcGrant(t, engine)
		req, _, _, err := env.Store.OIDCAuthRequestByCode(ctx, digest)
		if err != nil {
			t.Fatal(err)
		}
		first, firstRefresh, firstDigest := codeTokens(c, admin, req)
		if err := env.Store.RedeemOIDCCode(ctx, req.ID, first, firstRefresh, firstDigest); err != nil {
			t.Fatal(err)
		}
		family := first.FamilyID
		token := func(kind string) identity.OIDCToken {
			return identity.OIDCToken{ID: uuid.NewString(), Kind: kind, ClientID: c.ID, UserID: admin.User.ID, FamilyID: family, AuthRequestID: req.ID,
				Scopes: []string{"openid"}, AuthTime: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		}
		codes, unexpected := race(racers, func(int) error {
			_, d := identity.NewSecret()
			return env.Store.RotateOIDCTokens(ctx, token("access"), token("refresh"), d, firstDigest)
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
