package parlor

import (
	"net/http"
	"net/url"
	"strings"
)

// accountPageData is the operator's page of one account: who is in it
// and what it holds.
type accountPageData struct {
	Account StaffAccount
	Members []Member
	// MoreMembers is true when the account has more members than the page
	// lists.
	MoreMembers bool
	Rows        []Entitlement
	// Active counts the rows in force.
	Active int
	// Registry is false when the platform runs no registry (keyholder's
	// route is 404 at the gateway): the page then shows no pulls section.
	Registry bool
	Pulls    []Pull
	// PullsError says, in words, why the pull record could not be read.
	PullsError string
	// Installations are the account's, newest first;
	// InstallationsError says why they could not be read.
	Installations      []Installation
	InstallationsError string
}

// maxMemberPages bounds the member pages one view reads (200 a page).
const maxMemberPages = 5

// operatorAccountLookup opens the page of the account whose id the
// operator typed; without one it shows the form again.
func (s *server) operatorAccountLookup(w http.ResponseWriter, r *http.Request, sess *session) {
	id := strings.TrimSpace(r.URL.Query().Get("id"))
	if id == "" {
		p := &page{Title: "Operator console", User: &sess.Me, Tab: "home",
			Errors: map[string]string{"id": "Type the account's id, such as 0b0e5f0c-…: the buyer reads it from their accounts page."}}
		s.render(w, r, http.StatusBadRequest, "operator", p)
		return
	}
	http.Redirect(w, r, "/operator/accounts/"+url.PathEscape(id), http.StatusSeeOther)
}

func (s *server) operatorAccount(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	// Identity answers an unknown and a malformed id with the same 404, so
	// no later call is made for an account that is not there.
	acct, err := s.api.StaffAccount(r.Context(), sess.Token, id)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	d := accountPageData{Account: acct}
	cursor := ""
	for range maxMemberPages {
		ms, next, err := s.api.StaffMembers(r.Context(), sess.Token, acct.ID, cursor)
		if err != nil {
			s.fail(w, r, &sess.Me, err)
			return
		}
		d.Members = append(d.Members, ms...)
		if cursor = next; cursor == "" {
			break
		}
	}
	d.MoreMembers = cursor != ""
	if d.Rows, err = s.allRows(r, sess, acct.ID); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	// The pull record is the registry's: without it the page still shows
	// the account, so a failure here is a sentence, not an error page.
	switch pulls, err := s.api.StaffPulls(r.Context(), sess.Token, acct.ID); {
	case err == nil:
		d.Registry, d.Pulls = true, pulls
	case StatusOf(err) == http.StatusNotFound:
	default:
		d.Registry = true
		s.log.WarnContext(r.Context(), "staff pulls", "account_id", acct.ID, "err", err.Error())
		d.PullsError = "The pull record cannot be read now; reload the page to try again."
	}
	if d.Installations, err = s.api.OperatorInstallations(r.Context(), sess.Token, acct.ID); err != nil {
		s.log.WarnContext(r.Context(), "staff installations", "account_id", acct.ID, "err", err.Error())
		d.InstallationsError = "The installations cannot be read now; reload the page to try again."
	}
	for _, row := range d.Rows {
		if row.Status == "active" {
			d.Active++
		}
	}
	s.render(w, r, http.StatusOK, "operator_account", &page{Title: "Account " + acct.Name, User: &sess.Me,
		Tab: "accounts", Data: d})
}
