package parlor_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestOperatorAccountPage: staff open any account by id and see its
// members and its entitlement rows, with the grant and revoke actions; a
// customer, even the account's owner, gets the console's 404.
func TestOperatorAccountPage(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	buyerEmail := uniqueEmail("buyer")
	buyer := newVisitor(t, base)
	buyer.signUp(buyerEmail)
	created := buyer.post("/app/accounts", url.Values{"name": {"Harbour Lights"}})
	if created.Status != http.StatusSeeOther {
		t.Fatalf("create team: %d\n%s", created.Status, visibleText(created.Body))
	}
	team := accountIDFrom(t, created.location())
	opEmail := uniqueEmail("operator")
	op := newVisitor(t, base)
	op.signUp(opEmail)
	st.makeStaff(t, opEmail)
	if a := op.post("/operator/grant", url.Values{"account_id": {team}, "product": {"platform"}, "version_range": {"^1.0.0"},
		"source": {"reconciled_payment"}, "reference": {"pi_harbour"}, "max_installations": {"3"}}); a.Status != http.StatusSeeOther {
		t.Fatalf("grant: %d\n%s", a.Status, visibleText(a.Body))
	}

	t.Run("OK", func(t *testing.T) {
		page := op.get("/operator/accounts/"+team).expect(t, http.StatusOK, "Harbour Lights", team, "Team account",
			"Members", buyerEmail+" owner", "Entitlements", "1 active of 1 rows",
			"platform ^1.0.0 at most 3 active reconciled_payment pi_harbour", "Grant an entitlement",
			"This account has activated no installation.")
		// This stack runs no registry: the page shows no pulls at all.
		if strings.Contains(page.Body, `id="pulls-title"`) {
			t.Errorf("the account page shows a pulls section without a registry")
		}
		for _, link := range []string{`href="/operator/grant?account_id=` + team + `"`, `href="/operator/entitlements?account_id=` + team + `"`,
			`/revoke?account_id=` + team + `"`} {
			if !strings.Contains(page.Body, link) {
				t.Errorf("the account page lacks the link %s", link)
			}
		}
		personal := personalAccount(t, buyer)
		op.get("/operator/accounts/"+personal).expect(t, http.StatusOK, "Personal account", buyerEmail+" owner",
			"This account has no entitlement rows.")
	})

	t.Run("LinkedFromTheConsole", func(t *testing.T) {
		link := `href="/operator/accounts/` + team + `"`
		for _, path := range []string{"/operator/entitlements?account_id=" + team, "/operator/grant?account_id=" + team} {
			if page := op.get(path).expect(t, http.StatusOK); !strings.Contains(page.Body, link) {
				t.Errorf("%s does not link to the account's page", path)
			}
		}
		op.get("/operator").expect(t, http.StatusOK, "Accounts", "Open")
	})

	t.Run("Lookup", func(t *testing.T) {
		tests := []struct {
			name     string
			query    string
			status   int
			location string
			text     string
		}{
			{"OK", "?id=" + team, http.StatusSeeOther, "/operator/accounts/" + team, ""},
			{"Trimmed", "?id=%20" + team + "%20", http.StatusSeeOther, "/operator/accounts/" + team, ""},
			{"EmptyIDLists", "?id=%20", http.StatusOK, "", "Harbour Lights"},
			{"EveryAccount", "", http.StatusOK, "", "Harbour Lights"},
			{"ByName", "?query=harbour", http.StatusOK, "", "Harbour Lights"},
			{"ByMemberAddress", "?query=" + url.QueryEscape(buyerEmail), http.StatusOK, "", "Harbour Lights"},
			{"NoMatch", "?query=no+such+account", http.StatusOK, "", "No account matches “no such account”."},
			{"ErrShortQuery", "?query=h", http.StatusUnprocessableEntity, "", "Type at least 2 characters."},
			{"ErrStaleCursor", "?cursor=nope", http.StatusUnprocessableEntity, "", "This page of the list no longer exists"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				a := op.get("/operator/accounts" + tt.query)
				if tt.location != "" {
					if a.Status != tt.status || a.location() != tt.location {
						t.Errorf("lookup%s = %d to %q, want %d to %q", tt.query, a.Status, a.location(), tt.status, tt.location)
					}
					return
				}
				a.expect(t, tt.status, tt.text)
			})
		}
	})

	t.Run("ErrNotFoundInWords", func(t *testing.T) {
		for _, id := range []string{"6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", "not-a-uuid", "%20"} {
			op.get("/operator/accounts/"+id).expect(t, http.StatusNotFound, "There is nothing here, or it is not visible to you.")
		}
	})

	t.Run("ErrHiddenFromCustomers", func(t *testing.T) {
		anonymous := newVisitor(t, base)
		for name, v := range map[string]*visitor{"owner": buyer, "signed out": anonymous} {
			for _, path := range []string{"/operator/accounts/" + team, "/operator/accounts?id=" + team} {
				page := v.get(path).expect(t, http.StatusNotFound, "There is nothing here")
				if strings.Contains(page.Body, "pi_harbour") || strings.Contains(page.Body, "Harbour Lights") {
					t.Errorf("%s GET %s shows the account", name, path)
				}
			}
		}
	})
}

// TestOperatorAccountPagePulls: with the registry behind the gateway, the
// account's page lists its pulls, with the credential that pulled.
func TestOperatorAccountPagePulls(t *testing.T) {
	st := startDeliveryStack(t)
	base := startParlor(t, st.GatewayURL)
	c, cred := st.Entitled(uniqueEmail("puller"), "platform", "")
	img := st.PushImage("platform", "1.2.3", 256, 1)
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(st.GatewayHost+"/platform:1.2.3", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Get(ref, remote.WithAuth(&authn.Basic{Username: cred.Username, Password: cred.Password})); err != nil {
		t.Fatalf("pull through the gateway: %v", err)
	}
	op := newVisitor(t, base)
	op.cookie = st.StaffToken
	op.get("/operator/accounts/"+c.AccountID).expect(t, http.StatusOK, "Pulls", "platform:1.2.3", want.String(), cred.Username)

	other := st.NewCustomer(uniqueEmail("idle"))
	op.get("/operator/accounts/"+other.AccountID).expect(t, http.StatusOK, "Pulls",
		"Nothing has been pulled with this account's credentials yet.")
}
