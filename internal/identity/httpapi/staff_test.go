package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestStaffAccountRoutes: staff read any account and its members; a
// customer, even the account's owner, gets the 403 of the other staff
// routes; an unknown or malformed id is 404.
func TestStaffAccountRoutes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		ownerID, owner := s.signUp(t, "owner@example.com")
		joinerID, joiner := s.signUp(t, "joiner@example.com")
		_, staff := s.signUp(t, "staff@example.com")
		if err := s.env.Service.SetStaff(ctx, "staff@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		inv := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", map[string]string{"email": "joiner@example.com", "role": "admin"}, bearer(owner)).want(t, http.StatusCreated).object(t)["token"].(string)
		// Members are listed in join order; the test clock stands still.
		s.env.Clock.Advance(time.Minute)
		s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv}, bearer(joiner)).want(t, http.StatusOK)

		got := s.do(t, "GET", "/v1/operator/accounts/"+acc, nil, bearer(staff)).want(t, http.StatusOK).object(t)
		wantKeys(t, "staff account", got, "account")
		a := got["account"].(map[string]any)
		wantKeys(t, "account", a, "id", "name", "slug", "personal", "created_at", "updated_at")
		if a["id"] != acc || a["name"] != "Acme" || a["slug"] != "acme" || a["personal"] != false {
			t.Errorf("account = %v", a)
		}
		// The browser's way: the session cookie on a GET.
		s.do(t, "GET", "/v1/operator/accounts/"+acc, nil, cookie(staff)).want(t, http.StatusOK)

		list := s.do(t, "GET", "/v1/operator/accounts/"+acc+"/members", nil, bearer(staff)).want(t, http.StatusOK).object(t)
		wantKeys(t, "member list", list, "members", "next_cursor")
		ms := list["members"].([]any)
		if len(ms) != 2 || list["next_cursor"] != nil {
			t.Fatalf("members = %v", list)
		}
		for i, want := range []struct{ id, email, role string }{{ownerID, "owner@example.com", "owner"}, {joinerID, "joiner@example.com", "admin"}} {
			m := ms[i].(map[string]any)
			wantKeys(t, "membership", m, "account_id", "user_id", "email", "role", "created_at")
			if m["account_id"] != acc || m["user_id"] != want.id || m["email"] != want.email || m["role"] != want.role {
				t.Errorf("member %d = %v, want %s %s", i, m, want.email, want.role)
			}
		}
		first := s.do(t, "GET", "/v1/operator/accounts/"+acc+"/members?limit=1", nil, bearer(staff)).want(t, http.StatusOK).object(t)
		next, _ := first["next_cursor"].(string)
		if len(first["members"].([]any)) != 1 || next == "" {
			t.Fatalf("first page = %v, want one member and a cursor", first)
		}
		second := s.do(t, "GET", "/v1/operator/accounts/"+acc+"/members?limit=1&cursor="+next, nil, bearer(staff)).want(t, http.StatusOK).object(t)
		if m := second["members"].([]any); len(m) != 1 || m[0].(map[string]any)["email"] != "joiner@example.com" {
			t.Errorf("second page = %v", second)
		}

		// The console's account list: every account, or a search by name,
		// handle or a member's address; customers are refused.
		search := func(query string) []string {
			t.Helper()
			got := s.do(t, "GET", "/v1/operator/accounts?query="+url.QueryEscape(query), nil, bearer(staff)).want(t, http.StatusOK).object(t)
			var names []string
			for _, a := range got["accounts"].([]any) {
				names = append(names, a.(map[string]any)["name"].(string))
			}
			return names
		}
		if got := search("acm"); len(got) != 1 || got[0] != "Acme" {
			t.Errorf("search by name = %v, want [Acme]", got)
		}
		if got := search("JOINER@"); !slices.Contains(got, "Acme") {
			t.Errorf("search by a member's address = %v, want Acme among them", got)
		}
		if got := search("100%_"); len(got) != 0 {
			t.Errorf("LIKE's wildcards matched literally: %v", got)
		}
		all := s.do(t, "GET", "/v1/operator/accounts", nil, bearer(staff)).want(t, http.StatusOK).object(t)
		if n := len(all["accounts"].([]any)); n != 4 { // three personal accounts and Acme
			t.Errorf("every account = %d, want 4", n)
		}
		s.do(t, "GET", "/v1/operator/accounts", nil, bearer(owner)).problem(t, http.StatusForbidden, "forbidden")
		s.do(t, "GET", "/v1/operator/accounts?query=a", nil, bearer(staff)).problem(t, http.StatusUnprocessableEntity, "validation_failed")

		const unknown = "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d"
		for _, tt := range []struct {
			name   string
			path   string
			auth   []opt
			status int
			code   string
		}{
			{"Unauthenticated", "/v1/operator/accounts/" + acc, nil, http.StatusUnauthorized, "unauthorized"},
			{"OwnerIsNotStaff", "/v1/operator/accounts/" + acc, []opt{bearer(owner)}, http.StatusForbidden, "forbidden"},
			{"MembersOwnerIsNotStaff", "/v1/operator/accounts/" + acc + "/members", []opt{bearer(owner)}, http.StatusForbidden, "forbidden"},
			{"CustomerMalformedIDIsForbidden", "/v1/operator/accounts/nope", []opt{bearer(joiner)}, http.StatusForbidden, "forbidden"},
			{"CustomerBadCursorIsForbidden", "/v1/operator/accounts/" + acc + "/members?cursor=%%%", []opt{bearer(joiner)}, http.StatusForbidden, "forbidden"},
			{"Unknown", "/v1/operator/accounts/" + unknown, []opt{bearer(staff)}, http.StatusNotFound, "not_found"},
			{"Malformed", "/v1/operator/accounts/nope", []opt{bearer(staff)}, http.StatusNotFound, "not_found"},
			{"MembersUnknown", "/v1/operator/accounts/" + unknown + "/members", []opt{bearer(staff)}, http.StatusNotFound, "not_found"},
			{"MembersMalformed", "/v1/operator/accounts/nope/members", []opt{bearer(staff)}, http.StatusNotFound, "not_found"},
			{"MembersBadLimit", "/v1/operator/accounts/" + acc + "/members?limit=0", []opt{bearer(staff)}, http.StatusUnprocessableEntity, "validation_failed"},
			{"MembersBadCursor", "/v1/operator/accounts/" + acc + "/members?cursor=nope", []opt{bearer(staff)}, http.StatusUnprocessableEntity, "validation_failed"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				s.do(t, "GET", tt.path, nil, tt.auth...).problem(t, tt.status, tt.code)
			})
		}
		if got := s.do(t, "POST", "/v1/operator/accounts/"+acc, nil, bearer(staff)).Code; got != http.StatusMethodNotAllowed {
			t.Errorf("POST on the staff account route = %d, want 405", got)
		}
	})
}
