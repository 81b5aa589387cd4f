package parlor

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

func (s *server) operatorHome(w http.ResponseWriter, r *http.Request, sess *session) {
	s.render(w, r, http.StatusOK, "operator", &page{Title: "Operator console", User: &sess.Me, Tab: "home"})
}

// usersData is the staff directory search's content.
type usersData struct {
	Query string
	Users []StaffUser
	// Searched is false before a query is sent.
	Searched bool
}

func (s *server) operatorUsers(w http.ResponseWriter, r *http.Request, sess *session) {
	q := strings.TrimSpace(r.URL.Query().Get("query"))
	p := &page{Title: "Staff directory", User: &sess.Me, Tab: "users", Form: map[string]string{"query": q}}
	d := usersData{Query: q}
	status := http.StatusOK
	if q != "" {
		users, err := s.api.SearchUsers(r.Context(), sess.Token, q)
		if err != nil {
			status = formFailure(p, err)
		} else {
			d.Users, d.Searched = users, true
		}
	}
	p.Data = d
	s.render(w, r, status, "operator_users", p)
}

// entitlementListData is the entitlement list's content.
type entitlementListData struct {
	Rows       []Entitlement
	Products   []string
	NextPage   string
	FirstPage  string
	IsFiltered bool
	// Names are the rows' account names by id ("" when identity did not
	// answer for one: the row then shows its id).
	Names map[string]string
}

// accountNames reads the names of the accounts of rows, at once; an
// account identity cannot read (deleted meanwhile) is left out.
func (s *server) accountNames(r *http.Request, sess *session, rows []Entitlement) map[string]string {
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		ids = append(ids, row.AccountID)
	}
	return s.namesOf(r, sess, ids)
}

// namesOf reads the names of the accounts of ids (repeats allowed), at
// once, as accountNames does.
func (s *server) namesOf(r *http.Request, sess *session, all []string) map[string]string {
	var ids []string
	for _, id := range all {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	names := make(map[string]string, len(ids))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, id := range ids {
		wg.Go(func() {
			a, err := s.api.StaffAccount(r.Context(), sess.Token, id)
			if err != nil {
				return
			}
			mu.Lock()
			names[id] = a.Name
			mu.Unlock()
		})
	}
	wg.Wait()
	return names
}

func (s *server) operatorEntitlements(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	f := EntitlementFilter{
		AccountID: strings.TrimSpace(q.Get("account_id")),
		Product:   q.Get("product"),
		Status:    q.Get("status"),
		Cursor:    q.Get("cursor"),
		Limit:     25,
	}
	p := &page{Title: "Entitlements", User: &sess.Me, Tab: "entitlements", Notice: notice(r),
		Form: map[string]string{"account_id": f.AccountID, "product": f.Product, "status": f.Status}}
	d := entitlementListData{Products: products, IsFiltered: f.AccountID != "" || f.Product != "" || f.Status != ""}
	status := http.StatusOK
	rows, next, err := s.api.OperatorEntitlements(r.Context(), sess.Token, f)
	if err != nil {
		status = formFailure(p, err)
	} else {
		d.Rows, d.Names = rows, s.accountNames(r, sess, rows)
		base := url.Values{}
		for k, v := range p.Form {
			if v != "" {
				base.Set(k, v)
			}
		}
		if next != "" {
			n := url.Values{}
			for k, v := range base {
				n[k] = v
			}
			n.Set("cursor", next)
			d.NextPage = "/operator/entitlements?" + n.Encode()
		}
		if f.Cursor != "" {
			d.FirstPage = "/operator/entitlements?" + base.Encode()
		}
	}
	p.Data = d
	s.render(w, r, status, "operator_entitlements", p)
}

// grantData is the grant form's content: the account's current rows come
// first, because the procedure reads them before granting.
type grantData struct {
	Products []string
	// Current is nil until an account id is given.
	Current []Entitlement
	// Duplicate is the active row a refused grant collided with.
	Duplicate *Entitlement
	Granted   *Entitlement
	Looked    bool
}

func (s *server) grantForm(w http.ResponseWriter, r *http.Request, sess *session) {
	account := strings.TrimSpace(r.URL.Query().Get("account_id"))
	p := &page{Form: map[string]string{"account_id": account, "source": "reconciled_payment"}, Notice: notice(r)}
	s.renderGrant(w, r, sess, p, http.StatusOK, grantData{})
}

func (s *server) renderGrant(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, d grantData) {
	p.Title, p.User, p.Tab = "Grant an entitlement", &sess.Me, "grant"
	d.Products = products
	if account := p.Form["account_id"]; account != "" && status != http.StatusServiceUnavailable {
		rows, err := s.allRows(r, sess, account)
		switch {
		case err == nil:
			d.Current, d.Looked = rows, true
		case StatusOf(err) == http.StatusUnprocessableEntity:
			if p.Errors == nil {
				p.Errors = map[string]string{}
			}
			p.Errors["account_id"] = "An account id is a UUID, such as 0b0e5f0c-…; the buyer reads it from their accounts page."
		default:
			status = formFailure(p, err)
		}
	}
	p.Data = d
	s.render(w, r, status, "operator_grant", p)
}

// allRows reads every entitlement row of one account, newest first.
func (s *server) allRows(r *http.Request, sess *session, account string) ([]Entitlement, error) {
	var all []Entitlement
	cursor := ""
	for range 20 {
		rows, next, err := s.api.OperatorEntitlements(r.Context(), sess.Token,
			EntitlementFilter{AccountID: account, Cursor: cursor, Limit: 200})
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
		if next == "" {
			break
		}
		cursor = next
	}
	return all, nil
}

func (s *server) grant(w http.ResponseWriter, r *http.Request, sess *session) {
	g := Grant{
		AccountID:    strings.TrimSpace(r.PostFormValue("account_id")),
		Product:      r.PostFormValue("product"),
		VersionRange: strings.TrimSpace(r.PostFormValue("version_range")),
		Source:       strings.TrimSpace(r.PostFormValue("source")),
		Reference:    strings.TrimSpace(r.PostFormValue("reference")),
	}
	limit := strings.TrimSpace(r.PostFormValue("max_installations"))
	p := &page{Form: map[string]string{"account_id": g.AccountID, "product": g.Product,
		"version_range": g.VersionRange, "source": g.Source, "reference": g.Reference, "max_installations": limit}}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 {
			p.Errors = map[string]string{"max_installations": "Type a whole number from 1, or leave it empty for unlimited installations."}
			s.renderGrant(w, r, sess, p, http.StatusUnprocessableEntity, grantData{})
			return
		}
		g.MaxInstallations = &n
	}
	row, err := s.api.GrantEntitlement(r.Context(), sess.Token, g)
	if err != nil {
		status := formFailure(p, err)
		d := grantData{}
		if status == http.StatusConflict {
			d.Duplicate = &row
			p.Error = "An active row exists: leave it, or revoke and re-grant. Nothing was written."
		}
		s.renderGrant(w, r, sess, p, status, d)
		return
	}
	http.Redirect(w, r, "/operator/grant?account_id="+url.QueryEscape(row.AccountID)+"&done=granted", http.StatusSeeOther)
}

// revokeData names the row a revocation will change.
type revokeData struct{ Row Entitlement }

// findRow looks the row up among its account's rows; box has no read of
// one row by id.
func (s *server) findRow(w http.ResponseWriter, r *http.Request, sess *session) (*Entitlement, bool) {
	id, err := strconv.ParseInt(r.PathValue("eid"), 10, 64)
	account := strings.TrimSpace(r.FormValue("account_id"))
	if err != nil || account == "" {
		s.notFound(w, r, &sess.Me)
		return nil, false
	}
	rows, err := s.allRows(r, sess, account)
	if err != nil {
		if StatusOf(err) == http.StatusUnprocessableEntity {
			s.notFound(w, r, &sess.Me)
			return nil, false
		}
		s.fail(w, r, &sess.Me, err)
		return nil, false
	}
	for i := range rows {
		if rows[i].ID == id {
			return &rows[i], true
		}
	}
	s.notFound(w, r, &sess.Me)
	return nil, false
}

func (s *server) revokeForm(w http.ResponseWriter, r *http.Request, sess *session) {
	row, ok := s.findRow(w, r, sess)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "operator_revoke", &page{Title: "Revoke an entitlement", User: &sess.Me,
		Tab: "entitlements", Data: revokeData{Row: *row}})
}

func (s *server) revoke(w http.ResponseWriter, r *http.Request, sess *session) {
	id, err := strconv.ParseInt(r.PathValue("eid"), 10, 64)
	if err != nil {
		s.notFound(w, r, &sess.Me)
		return
	}
	row, err := s.api.RevokeEntitlement(r.Context(), sess.Token, id)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/operator/entitlements?account_id="+url.QueryEscape(row.AccountID)+"&done=revoked", http.StatusSeeOther)
}

// operatorReleasesData is the releases console's content.
type operatorReleasesData struct {
	Products []string
	Releases []Release
	Keys     publishKeysData
}

func (s *server) operatorReleases(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderOperatorReleases(w, r, sess, &page{Notice: notice(r), Form: map[string]string{"product": "platform"}}, http.StatusOK)
}

func (s *server) renderOperatorReleases(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	s.renderOperatorReleasesWith(w, r, sess, p, status, "")
}

// renderOperatorReleasesWith renders the Releases page with the
// publishing keys' section; token is a key just issued, shown once.
func (s *server) renderOperatorReleasesWith(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, token string) {
	p.Title, p.User, p.Tab = "Releases", &sess.Me, "releases"
	d := operatorReleasesData{Products: products}
	if status != http.StatusServiceUnavailable {
		list, err := s.api.Releases(r.Context(), sess.Token, "")
		if err != nil {
			status = formFailure(p, err)
		}
		d.Releases = list
		keys, err := s.publishKeys(r.Context(), sess)
		if err != nil && status < 400 {
			status = formFailure(p, err)
		}
		d.Keys = keys
	}
	d.Keys.Token = token
	p.Data = d
	s.render(w, r, status, "operator_releases", p)
}

func (s *server) publish(w http.ResponseWriter, r *http.Request, sess *session) {
	product := r.PostFormValue("product")
	version := strings.TrimSpace(r.PostFormValue("version"))
	notes := strings.TrimSpace(r.PostFormValue("notes"))
	if _, err := s.api.PublishRelease(r.Context(), sess.Token, product, version, notes); err != nil {
		p := &page{Form: map[string]string{"product": product, "version": version, "notes": notes}}
		status := formFailure(p, err)
		if status == http.StatusConflict {
			p.Errors["version"] = "This version of " + product + " is already published."
		}
		s.renderOperatorReleases(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/operator/releases?done=published", http.StatusSeeOther)
}
