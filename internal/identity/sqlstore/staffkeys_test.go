package sqlstore_test

import (
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestStaffAPIKeys: staff issue releases:publish keys in the company's
// account (licensing.md section 4); nobody else can, the account routes
// neither list nor revoke them, they answer only the publishing check,
// and they stop at revocation or when their creator stops being staff.
func TestStaffAPIKeys(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		staffUser := env.User(t, "ops@example.com")
		if err := env.Service.SetStaff(ctx, "ops@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		company := env.Team(t, env.For(t, staffUser, ""), "Platform Co")
		staff := env.For(t, company, "")
		customer := env.User(t, "buyer@example.com")
		customerTeam := env.Team(t, customer, "Buyer")

		k, err := env.Service.CreateStaffAPIKey(ctx, staff, identity.StaffAPIKeyInput{AccountID: company.Account.ID, Name: "release pipeline"})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if !identity.ValidAPIKeyToken(k.Token) || len(k.Scopes) != 1 || k.Scopes[0] != identity.ScopeReleasesPublish {
			t.Fatalf("key = %+v, want a plat_ token with releases:publish alone", k)
		}
		var stored int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE digest = $1`, k.Token).Scan(&stored); err != nil || stored != 0 {
			t.Fatalf("the token is stored in the clear (%d rows, %v)", stored, err)
		}
		ev := lastEvent(t, env, identity.EventAPIKeyCreated, k.ID)
		wantData(t, ev, map[string]any{"account_id": company.Account.ID, "name": "release pipeline",
			"scopes": []any{"releases:publish"}, "created_by": staff.User.ID, "expires_at": nil})

		t.Run("OKPublisher", func(t *testing.T) {
			pub, err := env.Service.Publisher(ctx, k.Token)
			if err != nil || pub.UserID != staff.User.ID || pub.APIKeyID != k.ID {
				t.Fatalf("publisher = %+v, %v; want the creator %s and the key", pub, err, staff.User.ID)
			}
			sess, err := env.Service.Publisher(ctx, env.Login(t, "ops@example.com"))
			if err != nil || sess.UserID != staff.User.ID || sess.APIKeyID != "" {
				t.Fatalf("publisher of a staff session = %+v, %v", sess, err)
			}
		})
		t.Run("ErrKeyHasNoAccount", func(t *testing.T) {
			p, err := env.Service.Authenticate(ctx, k.Token, company.Account.ID)
			if err != nil || p.Account != nil {
				t.Fatalf("principal = %+v, %v; want no account on its own account's routes", p, err)
			}
		})
		t.Run("ErrAccountRoutesDoNotSeeIt", func(t *testing.T) {
			keys, err := env.Service.ListAPIKeys(ctx, company)
			if err != nil || len(keys) != 0 {
				t.Fatalf("account list = %+v, %v; want none", keys, err)
			}
			wantCode(t, env.Service.RevokeAPIKey(ctx, company, k.ID), identity.CodeNotFound)
			_, err = env.Service.CreateAPIKey(ctx, company, identity.CreateAPIKeyInput{Name: "x", Scopes: []string{identity.ScopeReleasesPublish}})
			wantFields(t, err, field("scopes", identity.RuleInvalid))
		})
		t.Run("ErrNotStaff", func(t *testing.T) {
			writesNothing(t, env, func() {
				_, err := env.Service.CreateStaffAPIKey(ctx, customerTeam, identity.StaffAPIKeyInput{AccountID: customerTeam.Account.ID, Name: "mine"})
				wantCode(t, err, identity.CodeForbidden)
			})
			_, err := env.Service.StaffAPIKeys(ctx, customer)
			wantCode(t, err, identity.CodeForbidden)
			wantCode(t, env.Service.RevokeStaffAPIKey(ctx, customer, k.ID), identity.CodeForbidden)
			_, err = env.Service.Publisher(ctx, env.Login(t, "buyer@example.com"))
			wantCode(t, err, identity.CodeForbidden)
		})
		t.Run("ErrNotAMemberOfTheAccount", func(t *testing.T) {
			_, err := env.Service.CreateStaffAPIKey(ctx, staff, identity.StaffAPIKeyInput{AccountID: customerTeam.Account.ID, Name: "theirs"})
			wantCode(t, err, identity.CodeNotFound)
		})
		t.Run("ErrValidation", func(t *testing.T) {
			past := env.Clock.Now().Add(-time.Hour)
			_, err := env.Service.CreateStaffAPIKey(ctx, staff, identity.StaffAPIKeyInput{ExpiresAt: &past})
			wantFields(t, err, field("name", identity.RuleRequired), field("account_id", identity.RuleRequired), field("expires_at", identity.RuleInvalid))
		})
		t.Run("ErrAccountKeyCannotPublish", func(t *testing.T) {
			ak, err := env.Service.CreateAPIKey(ctx, customerTeam, identity.CreateAPIKeyInput{Name: "all", Scopes: identity.Scopes()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = env.Service.Publisher(ctx, ak.Token)
			wantCode(t, err, identity.CodeInsufficientScope)
		})
		t.Run("ErrRevoked", func(t *testing.T) {
			keys, err := env.Service.StaffAPIKeys(ctx, staff)
			if err != nil || len(keys) != 1 || keys[0].ID != k.ID || keys[0].Token != "" {
				t.Fatalf("staff list = %+v, %v; want the one key, no token", keys, err)
			}
			if err := env.Service.RevokeStaffAPIKey(ctx, staff, k.ID); err != nil {
				t.Fatalf("revoke: %v", err)
			}
			wantData(t, lastEvent(t, env, identity.EventAPIKeyRevoked, k.ID), map[string]any{"account_id": company.Account.ID, "revoked_by": staff.User.ID})
			_, err = env.Service.Publisher(ctx, k.Token)
			wantCode(t, err, identity.CodeUnauthorized)
			wantCode(t, env.Service.RevokeStaffAPIKey(ctx, staff, k.ID), identity.CodeNotFound)
			if keys, _ := env.Service.StaffAPIKeys(ctx, staff); len(keys) != 0 {
				t.Fatalf("staff list after revoke = %+v", keys)
			}
		})
		t.Run("ErrCreatorNoLongerStaff", func(t *testing.T) {
			k2, err := env.Service.CreateStaffAPIKey(ctx, staff, identity.StaffAPIKeyInput{AccountID: company.Account.ID, Name: "second"})
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Service.SetStaff(ctx, "ops@example.com", false, "test"); err != nil {
				t.Fatal(err)
			}
			_, err = env.Service.Publisher(ctx, k2.Token)
			wantCode(t, err, identity.CodeUnauthorized)
			var found bool
			for _, ev := range eventsOf(t, env, identity.EventAPIKeyRevoked) {
				if ev.Subject == k2.ID {
					found = true
					wantData(t, ev, map[string]any{"account_id": company.Account.ID, "revoked_by": staff.User.ID})
				}
			}
			if !found {
				t.Fatal("no api_key.revoked event for the key of a creator who stopped being staff")
			}
		})
	})
}
