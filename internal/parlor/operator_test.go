package parlor_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/parlor"
)

func TestOperatorConsoleIsHiddenFromCustomers(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	customer := newVisitor(t, base)
	customer.signUp(uniqueEmail("customer"))
	anonymous := newVisitor(t, base)
	paths := []string{"/operator", "/operator/users?query=ab", "/operator/entitlements", "/operator/grant",
		"/operator/releases", "/operator/entitlements/1/revoke?account_id=x", "/operator/anything"}
	for _, path := range paths {
		for name, v := range map[string]*visitor{"customer": customer, "signed out": anonymous} {
			if a := v.get(path); a.Status != http.StatusNotFound {
				t.Errorf("%s GET %s: status %d, want 404", name, path, a.Status)
			}
		}
	}
	for _, path := range []string{"/operator/grant", "/operator/releases", "/operator/entitlements/1/revoke"} {
		if a := customer.post(path, url.Values{"account_id": {"x"}, "product": {"platform"}, "version": {"1.0.0"}}); a.Status != http.StatusNotFound {
			t.Errorf("customer POST %s: status %d, want 404", path, a.Status)
		}
	}
	if page := customer.get("/app").Body; strings.Contains(page, `href="/operator"`) {
		t.Errorf("a customer's pages link to the console")
	}
}

var rowID = regexp.MustCompile(`/operator/entitlements/(\d+)/revoke\?account_id=`)

func TestOperatorReconciliation(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	buyer := newVisitor(t, base)
	buyerEmail := uniqueEmail("buyer")
	buyer.signUp(buyerEmail)
	acct := personalAccount(t, buyer)
	opEmail := uniqueEmail("operator")
	op := newVisitor(t, base)
	op.signUp(opEmail)
	st.makeStaff(t, opEmail)

	op.get("/app").expect(t, http.StatusOK, "Operator")
	op.get("/operator").expect(t, http.StatusOK, "Operator console", "Staff directory", "Grant")

	t.Run("StaffDirectory", func(t *testing.T) {
		op.get("/operator/users?query="+url.QueryEscape(buyerEmail[:12])).expect(t, http.StatusOK, buyerEmail)
		op.get("/operator/users?query=a").expect(t, http.StatusUnprocessableEntity, "Type at least 2 characters.")
		op.get("/operator/users?query=zzzzzz-nobody").expect(t, http.StatusOK, "No user matches")
	})

	t.Run("GrantShowsCurrentRowsFirst", func(t *testing.T) {
		op.get("/operator/grant").expect(t, http.StatusOK, "The buyer's account id", "Before granting: read the payment", "420")
		op.get("/operator/grant?account_id=not-a-uuid").expect(t, http.StatusOK, "An account id is a UUID")
		op.get("/operator/grant?account_id="+acct).expect(t, http.StatusOK, "This account has no entitlement rows.", "3. Grant")
	})

	grant := url.Values{"account_id": {acct}, "product": {"platform"}, "version_range": {"^1.0.0"},
		"source": {"reconciled_payment"}, "reference": {"pi_123"}}
	t.Run("Grant", func(t *testing.T) {
		a := op.post("/operator/grant", grant)
		if a.Status != http.StatusSeeOther {
			t.Fatalf("grant: %d\n%s", a.Status, visibleText(a.Body))
		}
		op.get(a.location()).expect(t, http.StatusOK, "The entitlement was granted.", "platform ^1.0.0 active reconciled_payment pi_123")
	})
	t.Run("ErrDuplicateExplained", func(t *testing.T) {
		page := op.post("/operator/grant", grant).
			expect(t, http.StatusConflict, "An active row exists: leave it, or revoke and re-grant.", "reference pi_123")
		if !rowID.MatchString(page.Body) {
			t.Errorf("the 409 does not link to revoking the existing row")
		}
	})
	t.Run("ErrFieldsNamed", func(t *testing.T) {
		bad := url.Values{"account_id": {acct}, "product": {"platform"}, "version_range": {"soon"}}
		// The whole rule, examples and all, and no support reference on
		// a refusal in words.
		op.post("/operator/grant", bad).expect(t, http.StatusUnprocessableEntity, "This version range")
		bad.Set("version_range", "^1.0.0 || ^2.0.0")
		page := op.post("/operator/grant", bad).expect(t, http.StatusUnprocessableEntity,
			"must be a single constraint (^X.Y.Z, ~X.Y.Z, >=X.Y.Z or X.Y.Z); unions")
		if strings.Contains(page.Body, `class="reference"`) {
			t.Errorf("a 422 shows a support reference:\n%s", visibleText(page.Body))
		}
		bad = url.Values{"account_id": {acct}, "product": {"gold"}}
		op.post("/operator/grant", bad).expect(t, http.StatusUnprocessableEntity, "This product")
		bad = url.Values{"account_id": {acct}, "product": {"platform"}, "max_installations": {"two"}}
		op.post("/operator/grant", bad).expect(t, http.StatusUnprocessableEntity, "Type a whole number from 1")
	})
	t.Run("BuyerSeesTheProduct", func(t *testing.T) {
		buyer.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"platform"}, "version_range": {"^1.2.0"}}).
			expect(t, http.StatusOK, "Capability for platform ^1.2.0")
		buyer.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"platform"}, "version_range": {"^2.0.0"}}).
			expect(t, http.StatusForbidden, "^2.0.0")
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		other := newVisitor(t, base)
		other.signUp(uniqueEmail("other"))
		otherAcct := personalAccount(t, other)
		for _, product := range []string{"kit", "identity", "courier"} {
			a := op.post("/operator/grant", url.Values{"account_id": {otherAcct}, "product": {product}})
			if a.Status != http.StatusSeeOther {
				t.Fatalf("grant %s: %d", product, a.Status)
			}
		}
		// Rows name their account (the buyer's personal one here) and
		// link its page.
		rows := op.get("/operator/entitlements?account_id="+acct).expect(t, http.StatusOK, "platform")
		name := regexp.MustCompile(`<td><a href="/operator/accounts/` + acct + `">([^<]+)</a></td>`).FindStringSubmatch(rows.Body)
		if name == nil || strings.Contains(name[1], acct) {
			t.Errorf("the entitlement row does not name its account:\n%s", visibleText(rows.Body))
		}
		page := op.get("/operator/entitlements?product=courier").expect(t, http.StatusOK, "courier")
		if !strings.Contains(page.Body, "/operator/accounts/"+otherAcct) {
			t.Errorf("the courier row does not link its account")
		}
		if strings.Contains(page.Body, "pi_123") {
			t.Errorf("the product filter shows another product's row")
		}
		op.get("/operator/entitlements?status=bogus").expect(t, http.StatusUnprocessableEntity, "This status")
		// 25 rows a page: 4 rows fit on one, with no next page.
		if page := op.get("/operator/entitlements"); strings.Contains(page.Body, "Next page") {
			t.Errorf("one page of rows offers a next page")
		}
	})

	t.Run("CursorPaging", func(t *testing.T) {
		pager := newVisitor(t, base)
		pager.signUp(uniqueEmail("pager"))
		acct := personalAccount(t, pager)
		api := parlor.NewClient(st.GatewayURL, 5*time.Second)
		ctx := context.Background()
		for range 13 { // 26 rows, all revoked: 25 on the first page, 1 on the second
			for _, product := range []string{"identity", "courier"} {
				row, err := api.GrantEntitlement(ctx, op.cookie, parlor.Grant{AccountID: acct, Product: product})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := api.RevokeEntitlement(ctx, op.cookie, row.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		first := op.get("/operator/entitlements?account_id="+acct).expect(t, http.StatusOK, "Next page")
		next := regexp.MustCompile(`href="([^"]*cursor=[^"]*)" rel="next"`).FindStringSubmatch(first.Body)
		if next == nil {
			t.Fatal("no next-page link")
		}
		second := op.get(html.UnescapeString(next[1])).expect(t, http.StatusOK, "First page")
		if n1, n2 := strings.Count(first.Body, "<td>revoked</td>"), strings.Count(second.Body, "<td>revoked</td>"); n1 != 25 || n2 != 1 {
			t.Errorf("pages hold %d and %d rows, want 25 and 1", n1, n2)
		}
		if strings.Contains(second.Body, `rel="next"`) {
			t.Errorf("the last page offers a next page")
		}
	})

	t.Run("RevokeNamesTheRow", func(t *testing.T) {
		m := rowID.FindStringSubmatch(op.get("/operator/entitlements?account_id=" + acct).Body)
		if m == nil {
			t.Fatal("the list offers no revoke link")
		}
		id := m[1]
		op.get("/operator/entitlements/"+id+"/revoke?account_id="+acct).
			expect(t, http.StatusOK, "Revoke entitlement #"+id+"?", acct, "platform", "^1.0.0", "pi_123")
		op.get("/operator/entitlements/99999/revoke?account_id="+acct).expect(t, http.StatusNotFound)
		a := op.post("/operator/entitlements/"+id+"/revoke", url.Values{"account_id": {acct}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("revoke: %d\n%s", a.Status, visibleText(a.Body))
		}
		op.get(a.location()).expect(t, http.StatusOK, "The entitlement was revoked.", "revoked")
		// Revoked, the product can be granted again as a new row.
		if a := op.post("/operator/grant", grant); a.Status != http.StatusSeeOther {
			t.Errorf("re-grant after revoke: %d", a.Status)
		}

		// The audit trail names the revoke and the grants, the account by
		// its name, the operator as "you", and the operator's becoming staff.
		trail := op.get("/operator/audit").expect(t, http.StatusOK, "Audit trail", "Revoked platform", "Granted platform",
			"#"+id, "you", "Made staff", opEmail)
		if !strings.Contains(trail.Body, `href="/operator/accounts/`+acct+`"`) {
			t.Errorf("the trail does not link the account by its name:\n%s", visibleText(trail.Body))
		}
		// Past a page of grants and revokes, the older page keeps the
		// staff changes at their own (first) page.
		older := regexp.MustCompile(`href="(/operator/audit\?events=[^"]+)" rel="next"`).FindStringSubmatch(trail.Body)
		if older == nil {
			t.Fatalf("no link to older grants and revokes:\n%s", visibleText(trail.Body))
		}
		op.get(html.UnescapeString(older[1])).expect(t, http.StatusOK, "Granted platform", "Newest", "Made staff", opEmail)
		op.get("/operator/audit?events=not-ours").expect(t, http.StatusBadRequest, "cursor")
		buyer.get("/operator/audit").expect(t, http.StatusNotFound)
	})

	t.Run("ReleasesAndApprovals", func(t *testing.T) {
		op.get("/operator/releases").expect(t, http.StatusOK, "Nothing has been published yet.")
		a := op.post("/operator/releases", url.Values{"product": {"platform"}, "version": {"1.4.0"}, "notes": {"Faster pages"}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("publish: %d\n%s", a.Status, visibleText(a.Body))
		}
		op.get(a.location()).expect(t, http.StatusOK, "The release was published.", "platform 1.4.0")
		op.post("/operator/releases", url.Values{"product": {"platform"}, "version": {"1.4"}}).
			expect(t, http.StatusUnprocessableEntity, "This version")
		op.post("/operator/releases", url.Values{"product": {"platform"}, "version": {"1.4.0"}}).
			expect(t, http.StatusConflict, "already published")

		page := buyer.get("/app/accounts/"+acct+"/releases").expect(t, http.StatusOK, "platform 1.4.0", "Faster pages")
		rel := regexp.MustCompile(`name="release_id" value="(\d+)"`).FindStringSubmatch(page.Body)
		if rel == nil {
			t.Fatal("no approve button")
		}
		a = buyer.post("/app/accounts/"+acct+"/approvals", url.Values{"release_id": {rel[1]}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("approve: %d\n%s", a.Status, visibleText(a.Body))
		}
		approved := buyer.get(a.location()).expect(t, http.StatusOK, "The release was approved.", "Approved")
		if strings.Contains(approved.Body, `name="release_id" value="`+rel[1]+`"`) {
			t.Errorf("the approved release still offers Approve")
		}
		first := buyer.get("/app/accounts/"+acct+"/activity").
			expect(t, http.StatusOK, "Release platform 1.4.0 approved", "Release platform 1.4.0 published")
		if strings.Contains(first.Body, "Older events") {
			t.Errorf("a timeline of one page offers an older one")
		}

		// Past a page, the timeline is read a page at a time, newest first.
		for i := range 100 {
			if a := op.post("/operator/releases", url.Values{"product": {"platform"}, "version": {fmt.Sprintf("1.5.%d", i)}}); a.Status != http.StatusSeeOther {
				t.Fatalf("publish 1.5.%d: %d\n%s", i, a.Status, visibleText(a.Body))
			}
		}
		newest := buyer.get("/app/accounts/"+acct+"/activity").expect(t, http.StatusOK, "Release platform 1.5.99 published", "Older events")
		older := regexp.MustCompile(`href="([^"]+/activity\?cursor=[^"]+)" rel="next"`).FindStringSubmatch(newest.Body)
		if older == nil {
			t.Fatalf("no link to the older page:\n%s", visibleText(newest.Body))
		}
		last := buyer.get(html.UnescapeString(older[1])).expect(t, http.StatusOK, "Release platform 1.4.0 approved", "Newest events")
		if strings.Contains(last.Body, "1.5.99") || strings.Contains(last.Body, "Older events") {
			t.Errorf("the older page repeats the newest or offers another:\n%s", visibleText(last.Body))
		}
		buyer.get("/app/accounts/"+acct+"/activity?cursor=not-ours").expect(t, http.StatusBadRequest, "cursor")
	})
}
