package events_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestIdentityEventsMeetTheContract drives every identity flow that emits,
// reads the outbox rows as the publisher builds envelopes from them, and
// validates each: the envelope first, then the payload against its schema.
// Every type identity declares must be seen.
func TestIdentityEventsMeetTheContract(t *testing.T) {
	dir, err := events.LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := events.LoadContract(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		env := identitytest.New(t, engine, identitytest.Config{})
		svc := env.Service

		owner := env.User(t, "owner@example.com")                   // user.created, account.created (personal)
		team := env.Team(t, owner, "Analytical Engines")            // account.created
		renamed, err := svc.RenameAccount(ctx, team, "Engines Ltd") // account.updated
		if err != nil {
			t.Fatal(err)
		}
		colleague := env.User(t, "colleague@example.com")
		inv, err := svc.Invite(ctx, team, "colleague@example.com", identity.RoleMember) // member.invited
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AcceptInvitation(ctx, colleague, inv.Token); err != nil { // member.joined
			t.Fatal(err)
		}
		if _, err := svc.ChangeRole(ctx, team, colleague.User.ID, identity.RoleAdmin); err != nil { // member.role_changed
			t.Fatal(err)
		}
		if err := svc.RemoveMember(ctx, team, colleague.User.ID); err != nil { // member.removed
			t.Fatal(err)
		}
		decliner := env.User(t, "decliner@example.com")
		offer, err := svc.Invite(ctx, team, "decliner@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		if offer, err = svc.ResendInvitation(ctx, team, offer.ID); err != nil { // member.invited again
			t.Fatal(err)
		}
		if err := svc.DeclineInvitation(ctx, decliner, offer.Token); err != nil { // member.removed (the invitee)
			t.Fatal(err)
		}
		if err := svc.SetStaff(ctx, "owner@example.com", true, "cli"); err != nil { // staff.enabled
			t.Fatal(err)
		}
		if err := svc.SetStaff(ctx, "owner@example.com", false, "cli"); err != nil { // staff.disabled
			t.Fatal(err)
		}
		// user.email_verified came with every env.User; a reset ends the
		// decliner's session.
		if err := svc.RequestPasswordReset(ctx, "decliner@example.com"); err != nil {
			t.Fatal(err)
		}
		reset := env.LinkToken(t, "decliner@example.com", identity.TemplatePasswordReset)
		if err := svc.ConfirmPasswordReset(ctx, reset, "another horse battery", ""); err != nil { // session.revoked
			t.Fatal(err)
		}
		en, err := svc.EnrolTOTP(ctx, owner, identitytest.Password)
		if err != nil {
			t.Fatal(err)
		}
		code, err := totp.GenerateCode(en.Secret, env.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.ConfirmTOTP(ctx, owner, code); err != nil { // mfa.enabled
			t.Fatal(err)
		}
		if err := svc.DisableTOTP(ctx, owner, en.RecoveryCodes[0]); err != nil { // mfa.disabled
			t.Fatal(err)
		}
		exp := env.Clock.Now().Add(time.Hour)
		for _, in := range []identity.CreateAPIKeyInput{
			{Name: "ci", Scopes: []string{identity.ScopeArtifactsFetch}},
			{Name: "release bot", Scopes: identity.Scopes(), ExpiresAt: &exp},
		} {
			k, err := svc.CreateAPIKey(ctx, team, in) // api_key.created
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.RevokeAPIKey(ctx, team, k.ID); err != nil { // api_key.revoked
				t.Fatal(err)
			}
		}
		rp, _, err := identity.RegisterOIDCClient(ctx, env.Store, env.For(t, owner, team.Account.ID), identity.RegisterOIDCClientInput{Name: "Shop", RedirectURIs: []string{"https://shop.example/cb"}}) // oidc_client.created
		if err != nil {
			t.Fatal(err)
		}
		if err := identity.RevokeOIDCClient(ctx, env.Store, env.For(t, owner, team.Account.ID), rp.ID); err != nil { // oidc_client.revoked
			t.Fatal(err)
		}
		if err := svc.DeleteAccount(ctx, env.For(t, owner, team.Account.ID)); err != nil { // account.deleted
			t.Fatal(err)
		}

		rows, err := outbox.List(ctx, env.DB, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		ids := map[string]bool{}
		for _, r := range rows {
			e := r.Envelope
			if err := contract.Validate(e); err != nil {
				t.Errorf("outbox row %d: %v\n%s", r.Seq, err, e.Data)
				continue
			}
			// The row survives the wire: encoded and strictly decoded back.
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := contract.ValidateJSON(b); err != nil {
				t.Errorf("outbox row %d on the wire: %v", r.Seq, err)
			}
			if ids[e.ID] {
				t.Errorf("envelope id %s used twice", e.ID)
			}
			ids[e.ID] = true
			if r.PublishedAt != nil || r.Attempts != 0 {
				t.Errorf("row %d: published_at %v attempts %d without a publisher", r.Seq, r.PublishedAt, r.Attempts)
			}
			seen[e.Type]++
		}
		for _, typ := range identity.EventTypes() {
			if seen[typ] == 0 {
				t.Errorf("no %s row: the flows did not emit it", typ)
			}
		}
		if seen[identity.EventAccountCreated] != 4 {
			t.Errorf("%d account.created rows, want 4 (three personal, one team)", seen[identity.EventAccountCreated])
		}

		// Subjects and payloads say what happened to what.
		for _, r := range rows {
			var data map[string]any
			if err := json.Unmarshal(r.Envelope.Data, &data); err != nil {
				t.Fatal(err)
			}
			switch r.Envelope.Type {
			case identity.EventAccountUpdated:
				if r.Envelope.Subject != renamed.ID || data["name"] != "Engines Ltd" {
					t.Errorf("account.updated: subject %s data %v", r.Envelope.Subject, data)
				}
			case identity.EventMemberRoleChanged:
				if data["old_role"] != "member" || data["new_role"] != "admin" || data["changed_by"] != owner.User.ID {
					t.Errorf("member.role_changed: %v", data)
				}
			case identity.EventStaffEnabled, identity.EventStaffDisabled:
				if r.Envelope.Subject != owner.User.ID || data["user_id"] != owner.User.ID {
					t.Errorf("%s: subject %s data %v, want the user", r.Envelope.Type, r.Envelope.Subject, data)
				}
			case identity.EventMemberJoined, identity.EventMemberInvited, identity.EventMemberRemoved, identity.EventAccountDeleted:
				if r.Envelope.Subject != team.Account.ID || data["account_id"] != team.Account.ID {
					t.Errorf("%s: subject %s data %v, want the team account", r.Envelope.Type, r.Envelope.Subject, data)
				}
			}
		}
		if !slices.IsSortedFunc(rows, func(a, b outbox.Row) int { return int(a.Seq - b.Seq) }) {
			t.Error("rows not in creation order")
		}
	})
}
