package parlor

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// products are the four products, in the order pages offer them.
var products = []string{"kit", "platform", "identity", "courier"}

// roleRank orders roles as identity's minimum-role checks do.
var roleRank = map[string]int{"member": 1, "admin": 2, "owner": 3}

// accountsData is the accounts page's content.
type accountsData struct{ Accounts []Account }

func (s *server) accounts(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderAccounts(w, r, sess, &page{Notice: notice(r)}, http.StatusOK)
}

func (s *server) renderAccounts(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	list, err := s.api.Accounts(r.Context(), sess.Token)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	p.Title, p.User, p.Data = "Your accounts", &sess.Me, accountsData{Accounts: list}
	s.render(w, r, status, "accounts", p)
}

func (s *server) createAccount(w http.ResponseWriter, r *http.Request, sess *session) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	a, err := s.api.CreateAccount(r.Context(), sess.Token, name)
	if err != nil {
		p := &page{Form: map[string]string{"name": name}}
		status := formFailure(p, err)
		if CodeOf(err) == "conflict" {
			p.Errors["name"] = "An account with a name like this already exists (names that differ only in case or punctuation collide). Choose another name."
			p.Error = "Please correct the fields marked below."
		}
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderAccounts(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(a.ID)+"?done=created", http.StatusSeeOther)
}

// accountData is the account page's content.
type accountData struct {
	Members  []Member
	CanAdmin bool
	IsOwner  bool
	// Owners counts the owners: the sole owner's own row offers no
	// change, since identity refuses the last owner's removal and
	// demotion.
	Owners int
	// Pending are the open invitations (admins see them).
	Pending []PendingInvitation
}

// loadAccount reads the account of the path, answering the page itself
// when it cannot (404 for a non-member, 503 when unavailable).
func (s *server) loadAccount(w http.ResponseWriter, r *http.Request, sess *session) (*Account, bool) {
	a, err := s.api.Account(r.Context(), sess.Token, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return nil, false
	}
	return &a, true
}

// withAccount reads the path's account and, at the same time, the page's
// own data: the page waits for one round trip instead of two. The
// account's answer decides first (a non-member's 404), then the data's.
func withAccount[T any](s *server, w http.ResponseWriter, r *http.Request, sess *session,
	fetch func(ctx context.Context, token, id string) (T, error)) (*Account, T, bool) {
	id := r.PathValue("id")
	var (
		data    T
		dataErr error
		wg      sync.WaitGroup
	)
	wg.Go(func() { data, dataErr = fetch(r.Context(), sess.Token, id) })
	a, err := s.api.Account(r.Context(), sess.Token, id)
	wg.Wait()
	if err == nil {
		err = dataErr
	}
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		var zero T
		return nil, zero, false
	}
	return &a, data, true
}

func (s *server) account(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderAccount(w, r, sess, &page{Notice: notice(r)}, http.StatusOK)
}

func (s *server) renderAccount(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	if status == http.StatusServiceUnavailable {
		s.unavailable(w, r, &sess.Me)
		return
	}
	a, d, ok := withAccount(s, w, r, sess, s.membersAndInvitations)
	if !ok {
		return
	}
	d.CanAdmin, d.IsOwner = roleRank[a.Role] >= roleRank["admin"], a.Role == "owner"
	if !d.CanAdmin {
		d.Pending = nil
	}
	p.Title, p.User, p.Account, p.Tab, p.Data = a.Name, &sess.Me, a, "members", d
	s.render(w, r, status, "account", p)
}

func (s *server) renameAccount(w http.ResponseWriter, r *http.Request, sess *session) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	id := r.PathValue("id")
	if err := s.api.RenameAccount(r.Context(), sess.Token, id, name); err != nil {
		p := &page{Form: map[string]string{"name": name}}
		status := formFailure(p, err)
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		if CodeOf(err) == "conflict" {
			p.Errors["name"] = "Another account already has a name like this. Choose another name."
		}
		s.renderAccount(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"?done=renamed", http.StatusSeeOther)
}

func (s *server) deleteAccount(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	if r.PostFormValue("confirm") != "yes" {
		// Nothing is undone after a delete, so it takes a deliberate tick.
		p := &page{Error: "Please correct the fields marked below.",
			Errors: map[string]string{"confirm": "Tick the box to confirm that the account and everything in it go for good."}}
		s.renderAccount(w, r, sess, p, http.StatusUnprocessableEntity)
		return
	}
	if err := s.api.DeleteAccount(r.Context(), sess.Token, id); err != nil {
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		p := &page{}
		status := formFailure(p, err)
		if StatusOf(err) == http.StatusForbidden {
			p.Error = "Only an owner can delete an account."
		}
		s.renderAccount(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/app?done=deleted", http.StatusSeeOther)
}

func (s *server) invite(w http.ResponseWriter, r *http.Request, sess *session) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	role := r.PostFormValue("role")
	_, err := s.api.Invite(r.Context(), sess.Token, r.PathValue("id"), email, role)
	if err != nil {
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		p := &page{Form: map[string]string{"email": email, "role": role}}
		status := formFailure(p, err)
		if StatusOf(err) == http.StatusForbidden {
			p.Error = "Only an admin or an owner can invite."
		}
		s.renderAccount(w, r, sess, p, status)
		return
	}
	// Redirected, so a reload does not invite twice: the link went by
	// mail and the invitation is listed as pending.
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(r.PathValue("id"))+"?done=invited", http.StatusSeeOther)
}

// membersAndInvitations reads an account's members and, at the same
// time, its open invitations; a member (who may not list them) reads
// none.
func (s *server) membersAndInvitations(ctx context.Context, token, id string) (accountData, error) {
	var (
		d       accountData
		pending []PendingInvitation
		pendErr error
		wg      sync.WaitGroup
	)
	wg.Go(func() { pending, pendErr = s.api.Invitations(ctx, token, id) })
	members, err := s.api.Members(ctx, token, id)
	wg.Wait()
	if StatusOf(pendErr) == http.StatusForbidden {
		pendErr = nil
	}
	if err == nil {
		err = pendErr
	}
	d.Members, d.Pending = members, pending
	for _, m := range members {
		if m.Role == "owner" {
			d.Owners++
		}
	}
	return d, err
}

// invitationAction resends or revokes an open invitation.
func (s *server) invitationAction(call func(ctx context.Context, token, id, inv string) error, done string) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		id := r.PathValue("id")
		if err := call(r.Context(), sess.Token, id, r.PathValue("inv")); err != nil {
			if StatusOf(err) == http.StatusNotFound {
				s.renderAccount(w, r, sess, &page{Error: "That invitation is no longer open: it was accepted, revoked or resent meanwhile."}, http.StatusNotFound)
				return
			}
			p := &page{}
			s.renderAccount(w, r, sess, p, formFailure(p, err))
			return
		}
		http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
	}
}

// memberConfirmData is the confirmation step of a role change or a
// removal: what will happen, to whom, and the form that does it.
type memberConfirmData struct {
	Member Member
	// Action is "remove" or "role"; Role the role asked for.
	Action, Role string
}

// confirmMember renders the confirmation step unless the form already
// carries it, and reports whether the change may go ahead.
func (s *server) confirmMember(w http.ResponseWriter, r *http.Request, sess *session, action string) bool {
	if r.PostFormValue("confirm") == "yes" {
		return true
	}
	a, members, ok := withAccount(s, w, r, sess, s.api.Members)
	if !ok {
		return false
	}
	user := r.PathValue("user")
	for _, m := range members {
		if m.UserID == user {
			d := memberConfirmData{Member: m, Action: action, Role: r.PostFormValue("role")}
			s.render(w, r, http.StatusOK, "member_confirm", &page{Title: "Confirm · " + a.Name, User: &sess.Me,
				Account: a, Tab: "members", Data: d})
			return false
		}
	}
	s.render(w, r, http.StatusNotFound, "error", &page{Title: "Not found", User: &sess.Me,
		Error: "That person is not a member of this account (any more)."})
	return false
}

func (s *server) changeRole(w http.ResponseWriter, r *http.Request, sess *session) {
	id, user := r.PathValue("id"), r.PathValue("user")
	if !s.confirmMember(w, r, sess, "role") {
		return
	}
	if err := s.api.ChangeRole(r.Context(), sess.Token, id, user, r.PostFormValue("role")); err != nil {
		s.memberFailure(w, r, sess, err)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"?done=role", http.StatusSeeOther)
}

func (s *server) removeMember(w http.ResponseWriter, r *http.Request, sess *session) {
	id, user := r.PathValue("id"), r.PathValue("user")
	if !s.confirmMember(w, r, sess, "remove") {
		return
	}
	if err := s.api.RemoveMember(r.Context(), sess.Token, id, user); err != nil {
		s.memberFailure(w, r, sess, err)
		return
	}
	if user == sess.Me.ID {
		http.Redirect(w, r, "/app?done=removed", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"?done=removed", http.StatusSeeOther)
}

// memberFailure explains a refused role change or removal above the
// member list, with the role rules in words.
func (s *server) memberFailure(w http.ResponseWriter, r *http.Request, sess *session, err error) {
	p := &page{}
	status := formFailure(p, err)
	switch {
	case StatusOf(err) == http.StatusNotFound:
		p.Error = "That person is not a member of this account (any more)."
	case StatusOf(err) == http.StatusForbidden && CodeOf(err) == "forbidden":
		p.Error = sentence(err) + " Owners change roles; admins remove members but not owners."
	}
	for _, f := range []string{"role", "user_id"} {
		if msg, ok := p.Errors[f]; ok {
			p.Error = msg
		}
	}
	s.renderAccount(w, r, sess, p, status)
}

// entitlementsData is the entitlements page's content: the account's
// holdings.
type entitlementsData struct {
	Holdings []Holding
	HasKit   bool
}

func (s *server) entitlements(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderEntitlements(w, r, sess, &page{Notice: notice(r)}, http.StatusOK)
}

func (s *server) renderEntitlements(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	a, list, ok := withAccount(s, w, r, sess, s.api.Holdings)
	if !ok {
		return
	}
	d := entitlementsData{Holdings: list}
	for _, e := range list {
		if e.Product == "kit" {
			d.HasKit = true
		}
	}
	p.Title, p.User, p.Account, p.Tab, p.Data = "Entitlements · "+a.Name, &sess.Me, a, "entitlements", d
	s.render(w, r, status, "entitlements", p)
}

// installationsData is the installations page's content.
type installationsData struct {
	Installations []Installation
}

func (s *server) installations(w http.ResponseWriter, r *http.Request, sess *session) {
	a, list, ok := withAccount(s, w, r, sess, s.api.Installations)
	if !ok {
		return
	}
	p := &page{Notice: notice(r)}
	p.Title, p.User, p.Account, p.Tab, p.Data = "Installations · "+a.Name, &sess.Me, a, "installations", installationsData{list}
	s.render(w, r, http.StatusOK, "installations", p)
}

func (s *server) deactivateInstallation(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	if err := s.api.DeactivateInstallation(r.Context(), sess.Token, r.PathValue("iid")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/installations?done=deactivated", http.StatusSeeOther)
}

func (s *server) claim(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	if err := s.api.Claim(r.Context(), sess.Token, id); err != nil {
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		p := &page{}
		status := formFailure(p, err)
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderEntitlements(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/entitlements?done=claimed", http.StatusSeeOther)
}

// releasesData is the releases page's content: Approved holds the ids
// of the releases this account has approved, which offer no Approve.
type releasesData struct {
	Releases []Release
	Approved map[int64]bool
}

func (s *server) releases(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderReleases(w, r, sess, &page{Notice: notice(r)}, http.StatusOK)
}

func (s *server) renderReleases(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	a, list, ok := withAccount(s, w, r, sess, func(ctx context.Context, token, id string) (releasesData, error) {
		var (
			d         releasesData
			events    []AuditEvent
			eventsErr error
			wg        sync.WaitGroup
		)
		wg.Go(func() { events, eventsErr = s.api.Timeline(ctx, token, id) })
		rels, err := s.api.AccountReleases(ctx, token, id)
		wg.Wait()
		if err == nil {
			err = eventsErr
		}
		d.Releases, d.Approved = rels, map[int64]bool{}
		for _, e := range events {
			if e.Type == "approval.created" && e.ReleaseID != nil {
				d.Approved[*e.ReleaseID] = true
			}
		}
		return d, err
	})
	if !ok {
		return
	}
	p.Title, p.User, p.Account, p.Tab, p.Data = "Releases · "+a.Name, &sess.Me, a, "releases", list
	s.render(w, r, status, "releases", p)
}

func (s *server) approve(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	rel, err := strconv.ParseInt(r.PostFormValue("release_id"), 10, 64)
	if err != nil || rel < 1 {
		s.renderReleases(w, r, sess, &page{Error: "Choose a release to approve."}, http.StatusUnprocessableEntity)
		return
	}
	if err := s.api.Approve(r.Context(), sess.Token, id, rel); err != nil {
		if StatusOf(err) == http.StatusNotFound && CodeOf(err) == "not_found" {
			p := &page{Error: "That release does not exist, or this account cannot see it."}
			s.renderReleases(w, r, sess, p, http.StatusNotFound)
			return
		}
		p := &page{}
		status := formFailure(p, err)
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderReleases(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/releases?done=approved", http.StatusSeeOther)
}

// activityData is a page of the audit timeline: Older says it is not
// the newest, Next is the cursor of the page after it.
type activityData struct {
	Events []AuditEvent
	Older  bool
	Next   string
}

// Paged says the page needs links to others.
func (d activityData) Paged() bool { return d.Older || d.Next != "" }

func (s *server) activity(w http.ResponseWriter, r *http.Request, sess *session) {
	cursor := r.URL.Query().Get("cursor")
	a, d, ok := withAccount(s, w, r, sess, func(ctx context.Context, token, id string) (activityData, error) {
		events, next, err := s.api.TimelinePage(ctx, token, id, cursor)
		return activityData{Events: events, Older: cursor != "", Next: next}, err
	})
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "activity", &page{Title: "Activity · " + a.Name, User: &sess.Me, Account: a,
		Tab: "activity", Data: d})
}

// downloadsData is the downloads page's content.
type downloadsData struct {
	// Products are the products the account holds, the only ones offered.
	Products   []string
	Capability *Capability
	// Credential is the registry credential just exchanged, shown once.
	Credential *credentialData
	// Versions are the newest releases within the account's ranges.
	Versions []downloadVersion
	// VersionsError says why the versions could not be read.
	VersionsError string
}

// downloadVersion is one release on the downloads page, with its files
// (none when it ships only as an image) or why they could not be read.
type downloadVersion struct {
	Release    Release
	Files      []ReleaseFile
	FilesError string
}

// maxDownloadVersions bounds the releases the page lists with their files.
const maxDownloadVersions = 10

func (s *server) downloads(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderDownloads(w, r, sess, &page{Form: map[string]string{}}, http.StatusOK, nil)
}

func (s *server) renderDownloads(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, c *Capability) {
	s.renderDownloadsWith(w, r, sess, p, status, c, nil)
}

func (s *server) renderDownloadsWith(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, c *Capability, cred *credentialData) {
	a, ok := s.loadAccount(w, r, sess)
	if !ok {
		return
	}
	p.Title, p.User, p.Account, p.Tab = "Downloads · "+a.Name, &sess.Me, a, "downloads"
	d := downloadsData{Capability: c, Credential: cred}
	ctx, id := r.Context(), a.ID
	holdings, err := s.api.Holdings(ctx, sess.Token, id)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	// Only what the account holds is offered, its range filled in.
	for _, h := range holdings {
		d.Products = append(d.Products, h.Product)
		if p.Form["artifact"] == "" {
			p.Form["artifact"] = h.Product
			if h.VersionRange != nil && p.Form["version_range"] == "" {
				p.Form["version_range"] = *h.VersionRange
			}
		}
	}
	if rels, err := s.api.AccountReleases(ctx, sess.Token, id); err != nil {
		s.log.WarnContext(ctx, "downloads: releases", "account_id", id, "err", err.Error())
		d.VersionsError = "The versions cannot be read now; reload the page to try again."
	} else {
		for i, rel := range rels {
			if i == maxDownloadVersions {
				break
			}
			v := downloadVersion{Release: rel}
			switch files, err := s.api.ReleaseFiles(ctx, sess.Token, id, rel.Product, rel.Version); {
			case err == nil:
				v.Files = files
			case StatusOf(err) == http.StatusNotFound:
				// An image only, or no registry: nothing to download here.
			default:
				v.FilesError = "The files cannot be listed now."
			}
			d.Versions = append(d.Versions, v)
		}
	}
	p.Data = d
	s.render(w, r, status, "downloads", p)
}

func (s *server) fetch(w http.ResponseWriter, r *http.Request, sess *session) {
	artifact := r.PostFormValue("artifact")
	rng := strings.TrimSpace(r.PostFormValue("version_range"))
	form := map[string]string{"artifact": artifact, "version_range": rng}
	c, err := s.api.Fetch(r.Context(), sess.Token, r.PathValue("id"), artifact, rng)
	if err != nil {
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		p := &page{Form: form}
		status := formFailure(p, err)
		switch CodeOf(err) {
		case "entitlement_required":
			p.Errors["artifact"] = "This account holds no active entitlement for " + artifact + "."
			p.Error = "Please correct the fields marked below."
		case "version_not_granted":
			p.Errors["version_range"] = sentence(err)
			p.Error = "Please correct the fields marked below."
		}
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderDownloads(w, r, sess, p, status, nil)
		return
	}
	s.renderDownloads(w, r, sess, &page{Form: form,
		Notice: "Your download capability is ready. It can be used once, before it expires."}, http.StatusOK, &c)
}
