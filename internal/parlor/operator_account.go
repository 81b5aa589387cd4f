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
	// OlderPulls says Pulls is not the newest page; NextPulls is the
	// cursor of the page after it.
	OlderPulls bool
	NextPulls  string
	// PullsError says, in words, why the pull record could not be read.
	PullsError string
	// Installations are the account's, newest first;
	// InstallationsError says why they could not be read.
	Installations      []Installation
	InstallationsError string
}

// maxMemberPages bounds the member pages one view reads (200 a page).
const maxMemberPages = 5

// staffAccountsData is the console's list of accounts.
type staffAccountsData struct {
	Query    string
	Accounts []StaffAccount
	// More is the next page's query string, empty on the last page.
	More string
}

// operatorAccountLookup is the console's accounts: with an id (the
// console's Open form) the page of that account; otherwise every
// account, or those whose name, handle or a member's address contains
// the query, 50 a page.
func (s *server) operatorAccountLookup(w http.ResponseWriter, r *http.Request, sess *session) {
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, "/operator/accounts/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	query := strings.TrimSpace(r.URL.Query().Get("query"))
	p := &page{Title: "Accounts · Operator console", User: &sess.Me, Tab: "accounts", Form: map[string]string{"query": query}}
	list, next, err := s.api.StaffAccounts(r.Context(), sess.Token, query, r.URL.Query().Get("cursor"))
	if err != nil {
		if StatusOf(err) != http.StatusUnprocessableEntity {
			s.fail(w, r, &sess.Me, err)
			return
		}
		status := formFailure(p, err)
		p.Error = ""
		if _, ok := p.Errors["query"]; !ok {
			p.Error = "This page of the list no longer exists: search again."
		}
		p.Data = staffAccountsData{Query: query}
		s.render(w, r, status, "operator_accounts", p)
		return
	}
	d := staffAccountsData{Query: query, Accounts: list}
	if next != "" {
		more := url.Values{"cursor": {next}}
		if query != "" {
			more.Set("query", query)
		}
		d.More = more.Encode()
	}
	p.Data = d
	s.render(w, r, http.StatusOK, "operator_accounts", p)
}

// PullsPaged says the pull record needs links to its other pages.
func (d accountPageData) PullsPaged() bool { return d.OlderPulls || d.NextPulls != "" }

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
	pullsCursor := r.URL.Query().Get("pulls_cursor")
	switch pp, err := s.api.StaffPulls(r.Context(), sess.Token, acct.ID, pullsCursor); {
	case err == nil:
		d.Registry, d.Pulls, d.OlderPulls, d.NextPulls = true, pp.Pulls, pullsCursor != "", pp.Next
	case StatusOf(err) == http.StatusNotFound:
	case StatusOf(err) == http.StatusUnprocessableEntity:
		d.Registry = true
		d.PullsError = "That link to older pulls is not one this page gave; open the account again for the newest."
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
