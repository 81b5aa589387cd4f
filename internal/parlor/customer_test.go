package parlor_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// confirmed is the confirmation step's answer to a removal.
var confirmed = url.Values{"confirm": {"yes"}}

var tokenInLink = regexp.MustCompile(`/invitations/accept\?token=([A-Za-z0-9_%.~-]+)`)

// teamWithMember makes a team owned by a fresh user and a second user who
// joined it through an invitation link; it returns both and the team id.
func teamWithMember(t *testing.T, st *stack, base string) (owner, member *visitor, team, memberEmail string) {
	t.Helper()
	owner = newVisitor(t, base)
	ownerEmail := uniqueEmail("owner")
	owner.signUp(ownerEmail)
	teamName := "Team " + uniqueEmail("t")[5:13]
	a := owner.post("/app/accounts", url.Values{"name": {teamName}})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("create team: %d\n%s", a.Status, visibleText(a.Body))
	}
	team = accountIDFrom(t, a.location())
	memberEmail = uniqueEmail("member")
	a = owner.post("/app/accounts/"+team+"/invitations", url.Values{"email": {memberEmail}, "role": {"member"}})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("invite: %d, want 303 so a reload does not invite twice\n%s", a.Status, visibleText(a.Body))
	}
	page := owner.get(a.location()).expect(t, http.StatusOK, "The invitation was emailed.", "Pending invitations", memberEmail)
	if strings.Contains(page.Body, "Email delivery is not connected") || tokenInLink.MatchString(page.Body) {
		t.Errorf("the account page shows an invitation token or says mail is not sent:\n%s", visibleText(page.Body))
	}
	token := linkTokenOf(t, st.linkIn(t, memberEmail, "/invitations/accept"))
	// Signed out, the link names the team, the inviter and the role, and
	// its sign-up carries the invited address.
	anon := newVisitor(t, base)
	invite := anon.get("/invitations/accept?token="+url.QueryEscape(token)).
		expect(t, http.StatusOK, ownerEmail+" invites "+memberEmail+" to join "+teamName+" as a member.")
	signup := regexp.MustCompile(`href="(/signup\?[^"]+)"`).FindStringSubmatch(invite.Body)
	if signup == nil || !strings.Contains(signup[1], "email="+url.QueryEscape(memberEmail)) {
		t.Fatalf("the sign-up link does not carry the invited address: %v", signup)
	}
	if form := anon.get(strings.ReplaceAll(signup[1], "&amp;", "&")); !strings.Contains(form.Body, `value="`+memberEmail+`"`) {
		t.Errorf("the sign-up form is not prefilled with %s", memberEmail)
	}
	member = newVisitor(t, base)
	member.signUp(memberEmail)
	member.verify(st, memberEmail) // only a verified holder of the invited address accepts
	member.get("/invitations/accept?token="+url.QueryEscape(token)).expect(t, http.StatusOK, "signed in as "+memberEmail, "Join "+teamName)
	a = member.post("/invitations/accept", url.Values{"token": {token}})
	if a.Status != http.StatusSeeOther || accountIDFrom(t, a.location()) != team {
		t.Fatalf("accept: %d to %q, want 303 to the team", a.Status, a.location())
	}
	member.get(a.location()).expect(t, http.StatusOK, "You joined the account.", memberEmail+" (you)")
	// Used once, the link is spent.
	member.post("/invitations/accept", url.Values{"token": {token}}).expect(t, http.StatusGone, "already been used")
	return owner, member, team, memberEmail
}

func TestAccountsAndMembers(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	owner, member, team, memberEmail := teamWithMember(t, st, base)

	t.Run("OwnerSeesTheTeamAndItsMembers", func(t *testing.T) {
		owner.get("/app").expect(t, http.StatusOK, "team", team)
		owner.get("/app/accounts/"+team).expect(t, http.StatusOK, "Members", memberEmail, "Invite someone", "Delete this account")
	})
	t.Run("MemberSeesNoAdminForms", func(t *testing.T) {
		page := member.get("/app/accounts/"+team).expect(t, http.StatusOK, "Members")
		for _, hidden := range []string{"Invite someone", "Delete this account", "Set role"} {
			if strings.Contains(page.Body, hidden) {
				t.Errorf("a member sees %q", hidden)
			}
		}
	})
	t.Run("RenameKeepsTheHandle", func(t *testing.T) {
		a := owner.post("/app/accounts/"+team+"/rename", url.Values{"name": {"Renamed Crew"}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("rename: %d\n%s", a.Status, visibleText(a.Body))
		}
		owner.get(a.location()).expect(t, http.StatusOK, "The account was renamed.", "Renamed Crew")
	})
	t.Run("ErrEmptyNameShownNextToTheField", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/rename", url.Values{"name": {" "}}).
			expect(t, http.StatusUnprocessableEntity, "Enter a name.")
		owner.post("/app/accounts", url.Values{"name": {""}}).
			expect(t, http.StatusUnprocessableEntity, "Enter a name.")
	})
	t.Run("ErrMemberCannotRename", func(t *testing.T) {
		member.post("/app/accounts/"+team+"/rename", url.Values{"name": {"Mine now"}}).
			expect(t, http.StatusForbidden, "does not permit")
	})
	t.Run("ErrInviteOwnerRole", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/invitations", url.Values{"email": {uniqueEmail("x")}, "role": {"owner"}}).
			expect(t, http.StatusUnprocessableEntity, "Choose admin or member")
	})
	t.Run("ErrInviteMalformedAddress", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/invitations", url.Values{"email": {"nobody"}, "role": {"member"}}).
			expect(t, http.StatusUnprocessableEntity, "Enter a valid email address")
	})
	t.Run("ErrOutsiderSeesNothing", func(t *testing.T) {
		outsider := newVisitor(t, base)
		outsider.signUp(uniqueEmail("outsider"))
		for _, path := range []string{"", "/entitlements", "/downloads", "/releases", "/activity"} {
			outsider.get("/app/accounts/"+team+path).expect(t, http.StatusNotFound, "nothing here")
		}
		outsider.get("/app/accounts/not-a-uuid").expect(t, http.StatusNotFound)
	})

	ownerID := memberID(t, owner, team, "(you)")
	memberUser := memberID(t, owner, team, memberEmail)
	t.Run("ErrLastOwnerCannotBeDemoted", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/members/"+ownerID+"/role", url.Values{"role": {"member"}, "confirm": {"yes"}}).
			expect(t, http.StatusUnprocessableEntity, "The last owner cannot be demoted")
	})
	t.Run("ErrLastOwnerCannotBeRemoved", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/members/"+ownerID+"/remove", confirmed).
			expect(t, http.StatusUnprocessableEntity, "The last owner cannot be removed")
	})
	t.Run("ChangeRole", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/members/"+memberUser+"/role", url.Values{"role": {"admin"}}).
			expect(t, http.StatusOK, "Make "+memberEmail+" admin of", "Their role is member now.", "Cancel")
		a := owner.post("/app/accounts/"+team+"/members/"+memberUser+"/role", url.Values{"role": {"admin"}, "confirm": {"yes"}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("role change: %d\n%s", a.Status, visibleText(a.Body))
		}
		owner.get(a.location()).expect(t, http.StatusOK, "The member's role was changed.")
		member.get("/app/accounts/"+team).expect(t, http.StatusOK, "your role: admin", "Invite someone")
	})
	t.Run("ErrAdminCannotRemoveOwner", func(t *testing.T) {
		member.post("/app/accounts/"+team+"/members/"+ownerID+"/remove", confirmed).
			expect(t, http.StatusForbidden, "An admin cannot remove an owner.")
	})
	t.Run("ErrPersonalAccountCannotBeDeleted", func(t *testing.T) {
		personal := personalAccount(t, owner)
		owner.get("/app/accounts/"+personal).expect(t, http.StatusOK, "A personal account cannot be deleted")
		owner.post("/app/accounts/"+personal+"/delete", url.Values{"confirm": {"yes"}}).
			expect(t, http.StatusUnprocessableEntity, "A personal account cannot be deleted; only team accounts can.")
	})
	t.Run("RemoveMember", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/members/"+memberUser+"/remove", nil).
			expect(t, http.StatusOK, "Remove "+memberEmail+" from", "They lose access to this account at once")
		a := owner.post("/app/accounts/"+team+"/members/"+memberUser+"/remove", confirmed)
		if a.Status != http.StatusSeeOther {
			t.Fatalf("remove: %d\n%s", a.Status, visibleText(a.Body))
		}
		owner.get(a.location()).expect(t, http.StatusOK, "The member was removed.")
		member.get("/app/accounts/"+team).expect(t, http.StatusNotFound)
	})
	t.Run("ErrDeleteNeedsConfirmation", func(t *testing.T) {
		owner.post("/app/accounts/"+team+"/delete", nil).
			expect(t, http.StatusUnprocessableEntity, "Tick the box to confirm")
		owner.get("/app/accounts/"+team).expect(t, http.StatusOK)
	})
	t.Run("DeleteTeam", func(t *testing.T) {
		a := owner.post("/app/accounts/"+team+"/delete", url.Values{"confirm": {"yes"}})
		if a.Status != http.StatusSeeOther || a.location() != "/app?done=deleted" {
			t.Fatalf("delete: %d to %q\n%s", a.Status, a.location(), visibleText(a.Body))
		}
		owner.get(a.location()).expect(t, http.StatusOK, "The account was deleted.")
		owner.get("/app/accounts/"+team).expect(t, http.StatusNotFound)
	})
}

func TestInvitationRefusals(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	v := newVisitor(t, base)
	v.signUp(uniqueEmail("someone"))
	v.post("/invitations/accept", url.Values{"token": {"not-a-real-token"}}).
		expect(t, http.StatusNotFound, "This invitation is not valid")
	v.get("/invitations/accept").expect(t, http.StatusOK, "This link has no invitation in it")
	// Signed out, accepting sends the visitor to sign in first.
	a := newVisitor(t, base).post("/invitations/accept", url.Values{"token": {"x"}})
	if a.Status != http.StatusSeeOther || !strings.HasPrefix(a.location(), "/signin?next=") {
		t.Errorf("signed-out accept: %d to %q, want 303 to sign in", a.Status, a.location())
	}
}

func TestKitEntitlementsAndDownloads(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	v := newVisitor(t, base)
	v.signUp(uniqueEmail("kit"))
	acct := personalAccount(t, v)

	v.get("/app/accounts/"+acct+"/entitlements").expect(t, http.StatusOK, "holds no entitlement yet", "Claim the kit")
	v.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"kit"}}).
		expect(t, http.StatusForbidden, "This account holds no active entitlement for kit.")

	a := v.post("/app/accounts/"+acct+"/claim", nil)
	if a.Status != http.StatusSeeOther {
		t.Fatalf("claim: %d\n%s", a.Status, visibleText(a.Body))
	}
	page := v.get(a.location()).expect(t, http.StatusOK, "The kit is yours", "kit every version")
	if strings.Contains(page.Body, "Claim the kit</h2>") {
		t.Errorf("the claim form is still offered after the claim")
	}

	v.get("/app/accounts/"+acct+"/installations").expect(t, http.StatusOK, "No installation has been activated yet", "installations:write")
	dl := v.get("/app/accounts/"+acct+"/downloads").expect(t, http.StatusOK, "Get a download capability",
		"No version within this account's holdings has been published yet.")
	if !strings.Contains(dl.Body, `<option value="kit" selected>kit</option>`) || strings.Contains(dl.Body, `<option value="platform"`) {
		t.Errorf("the downloads page does not offer exactly the kit the account holds")
	}
	got := v.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"kit"}, "version_range": {"^1.0.0"}}).
		expect(t, http.StatusOK, "Capability for kit ^1.0.0", "Use it once, before", "UTC")
	if !strings.Contains(got.Body, `data-copy="capability"`) {
		t.Errorf("the capability has no copy button")
	}
	v.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"kit"}, "version_range": {"one"}}).
		expect(t, http.StatusUnprocessableEntity, "This version range")
	v.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"platform"}}).
		expect(t, http.StatusForbidden, "no active entitlement for platform")

	v.get("/app/accounts/"+acct+"/releases").expect(t, http.StatusOK, "No release of a product this account holds")
	v.get("/app/accounts/"+acct+"/activity").expect(t, http.StatusOK, "Nothing has happened here yet.")
	v.post("/app/accounts/"+acct+"/approvals", url.Values{"release_id": {"x"}}).
		expect(t, http.StatusUnprocessableEntity, "Choose a release to approve.")
}

var memberRow = regexp.MustCompile(`<tr id="member-([0-9a-f-]{36})">\s*<td>([^<]*)</td>`)

// memberID is the user id in the member row whose first cell contains
// label, read from the row's id.
func memberID(t *testing.T, v *visitor, team, label string) string {
	t.Helper()
	page := v.get("/app/accounts/" + team).Body
	for _, m := range memberRow.FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[2], label) {
			return m[1]
		}
	}
	t.Fatalf("no member row shows %q", label)
	return ""
}

var personalRow = regexp.MustCompile(`/app/accounts/([0-9a-f-]{36})">[^<]*</a></td><td>personal`)

func personalAccount(t *testing.T, v *visitor) string {
	t.Helper()
	m := personalRow.FindStringSubmatch(v.get("/app").Body)
	if m == nil {
		t.Fatal("the accounts page lists no personal account")
	}
	return m[1]
}
