package sqlstore_test

import (
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestAPIKeys(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.User(t, "ada@example.com")
		team := env.Team(t, owner, "Acme")
		other := env.Team(t, owner, "Other")

		k, err := env.Service.CreateAPIKey(ctx, team, identity.CreateAPIKeyInput{Name: "ci", Scopes: []string{"artifacts:fetch", "account:read", "artifacts:fetch"}})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if !identity.ValidAPIKeyToken(k.Token) {
			t.Fatalf("token %q has not the form plat_ + 43 base64url characters", k.Token)
		}
		if got, want := k.Scopes, []string{"account:read", "artifacts:fetch"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("scopes = %v, want %v", got, want)
		}
		var stored int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE digest = $1`, k.Token).Scan(&stored); err != nil || stored != 0 {
			t.Fatalf("the token is stored in the clear (%d rows, %v)", stored, err)
		}
		ev := eventsOf(t, env, identity.EventAPIKeyCreated)
		if len(ev) != 1 || ev[0].Subject != k.ID || ev[0].Data["account_id"] != team.Account.ID {
			t.Fatalf("api_key.created events = %v", ev)
		}
		if _, has := ev[0].Data["id"]; has {
			t.Fatal("api_key.created carries an id in data")
		}

		t.Run("OKOwnAccount", func(t *testing.T) {
			p, err := env.Service.Authenticate(ctx, k.Token, team.Account.ID)
			if err != nil {
				t.Fatalf("authenticate: %v", err)
			}
			if p.APIKey == nil || p.Account == nil || p.Account.Role != identity.RoleAPIKey {
				t.Fatalf("principal = %+v, want the key and its account with role api_key", p)
			}
			keys, err := env.Service.ListAPIKeys(ctx, team)
			if err != nil || len(keys) != 1 || keys[0].LastUsedAt == nil || keys[0].Token != "" {
				t.Fatalf("list = %+v, %v; want one key with last_used_at and no token", keys, err)
			}
		})
		t.Run("ErrOtherAccountIsNotVisible", func(t *testing.T) {
			p, err := env.Service.Authenticate(ctx, k.Token, other.Account.ID)
			if err != nil || p.Account != nil {
				t.Fatalf("principal = %+v, %v; want no account", p, err)
			}
		})
		t.Run("ErrValidation", func(t *testing.T) {
			past := env.Clock.Now().Add(-time.Hour)
			_, err := env.Service.CreateAPIKey(ctx, team, identity.CreateAPIKeyInput{Name: "", Scopes: []string{"admin"}, ExpiresAt: &past})
			wantFields(t, err, field("name", identity.RuleRequired), field("scopes", identity.RuleInvalid), field("expires_at", identity.RuleInvalid))
		})
		t.Run("ErrExpired", func(t *testing.T) {
			exp := env.Clock.Now().Add(time.Hour)
			e, err := env.Service.CreateAPIKey(ctx, team, identity.CreateAPIKeyInput{Name: "short", Scopes: []string{"releases:read"}, ExpiresAt: &exp})
			if err != nil {
				t.Fatal(err)
			}
			env.Clock.Advance(time.Hour)
			_, err = env.Service.Authenticate(ctx, e.Token, team.Account.ID)
			wantCode(t, err, identity.CodeUnauthorized)
		})
		t.Run("ErrRevokedAtOnce", func(t *testing.T) {
			if err := env.Service.RevokeAPIKey(ctx, team, k.ID); err != nil {
				t.Fatalf("revoke: %v", err)
			}
			_, err := env.Service.Authenticate(ctx, k.Token, team.Account.ID)
			wantCode(t, err, identity.CodeUnauthorized)
			wantCode(t, env.Service.RevokeAPIKey(ctx, team, k.ID), identity.CodeNotFound)
			if got := eventsOf(t, env, identity.EventAPIKeyRevoked); len(got) != 1 || got[0].Subject != k.ID {
				t.Fatalf("api_key.revoked events = %v", got)
			}
		})
		t.Run("OKCreatorDemotedLosesKeys", func(t *testing.T) {
			admin := env.Join(t, team, env.User(t, "bob@example.com"), identity.RoleAdmin)
			bk, err := env.Service.CreateAPIKey(ctx, admin, identity.CreateAPIKeyInput{Name: "bob", Scopes: []string{"account:read"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Service.ChangeRole(ctx, team, admin.User.ID, identity.RoleMember); err != nil {
				t.Fatalf("demote: %v", err)
			}
			_, err = env.Service.Authenticate(ctx, bk.Token, team.Account.ID)
			wantCode(t, err, identity.CodeUnauthorized)
		})
		// A member removed by an owner and one who leaves lose their keys
		// alike, in the transaction that ends the membership.
		t.Run("OKCreatorRemovedOrLeavingLosesKeys", func(t *testing.T) {
			for _, tc := range []struct {
				email string
				leave bool
			}{{"cy@example.com", false}, {"di@example.com", true}} {
				p := env.Join(t, team, env.User(t, tc.email), identity.RoleAdmin)
				pk, err := env.Service.CreateAPIKey(ctx, p, identity.CreateAPIKeyInput{Name: tc.email, Scopes: []string{"account:read"}})
				if err != nil {
					t.Fatal(err)
				}
				by := team
				if tc.leave {
					by = p
				}
				if err := env.Service.RemoveMember(ctx, by, p.User.ID); err != nil {
					t.Fatalf("%s: remove (leave=%v): %v", tc.email, tc.leave, err)
				}
				_, err = env.Service.Authenticate(ctx, pk.Token, team.Account.ID)
				wantCode(t, err, identity.CodeUnauthorized)
				revoked := false
				for _, e := range eventsOf(t, env, identity.EventAPIKeyRevoked) {
					revoked = revoked || e.Subject == pk.ID
				}
				if !revoked {
					t.Errorf("%s: no api_key.revoked event for key %s (leave=%v)", tc.email, pk.ID, tc.leave)
				}
			}
		})
	})
}

func TestRaceAPIKeyRevoke(t *testing.T) {
	const n = 20
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		team := env.Team(t, env.User(t, "ada@example.com"), "Acme")
		k, err := env.Service.CreateAPIKey(ctx, team, identity.CreateAPIKeyInput{Name: "ci", Scopes: []string{"artifacts:fetch"}})
		if err != nil {
			t.Fatal(err)
		}
		codes, unexpected := race(n, func(i int) error {
			if i%2 == 0 {
				return env.Service.RevokeAPIKey(ctx, team, k.ID)
			}
			_, err := env.Service.Authenticate(ctx, k.Token, team.Account.ID)
			return err
		})
		wantNoUnexpected(t, unexpected)
		if codes[identity.CodeNotFound] != n/2-1 {
			t.Errorf("answers = %v, want exactly one revocation to succeed", codes)
		}
		_, err = env.Service.Authenticate(ctx, k.Token, team.Account.ID)
		wantCode(t, err, identity.CodeUnauthorized)
		if got := len(eventsOf(t, env, identity.EventAPIKeyRevoked)); got != 1 {
			t.Errorf("api_key.revoked events = %d, want 1", got)
		}
	})
}
