package parlor

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/platformco/platform/internal/semver"
)

// The pages over courier and keyholder: notification preferences, an
// account's webhook endpoints and their delivery log, the exchange that
// ends a download, and the pulls made.

// preferencesData is the preferences page's content.
type preferencesData struct{ Preferences Preferences }

func (s *server) preferences(w http.ResponseWriter, r *http.Request, sess *session) {
	prefs, err := s.api.Preferences(r.Context(), sess.Token)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	s.render(w, r, http.StatusOK, "preferences", &page{Title: "Notifications", User: &sess.Me,
		Notice: deliveryNotice(r), Data: preferencesData{Preferences: prefs}})
}

// updatePreferences sets every category from the form: a checkbox left
// unticked is not sent at all, so absent means off.
func (s *server) updatePreferences(w http.ResponseWriter, r *http.Request, sess *session) {
	want := Preferences{
		ProductUpdates:       r.PostFormValue("product_updates") == "on",
		ReleaseAnnouncements: r.PostFormValue("release_announcements") == "on",
		AccountActivity:      r.PostFormValue("account_activity") == "on",
	}
	if _, err := s.api.UpdatePreferences(r.Context(), sess.Token, want); err != nil {
		p := &page{Title: "Notifications", User: &sess.Me, Data: preferencesData{Preferences: want}}
		status := formFailure(p, err)
		s.render(w, r, status, "preferences", p)
		return
	}
	http.Redirect(w, r, "/app/preferences?done=preferences", http.StatusSeeOther)
}

// webhookEventTypes are the catalogued events about an account that an
// endpoint may subscribe to, with what each means.
var webhookEventTypes = []struct{ Type, Words string }{
	{"identity.account.created", "an account is created"},
	{"identity.account.updated", "the account is renamed"},
	{"identity.account.deleted", "the account is deleted"},
	{"identity.member.invited", "someone is invited"},
	{"identity.member.joined", "someone joins"},
	{"identity.member.removed", "a member is removed"},
	{"identity.member.role_changed", "a member's role changes"},
}

// webhooksData is the webhooks page's content.
type webhooksData struct {
	Endpoints  []WebhookEndpoint
	EventTypes []struct{ Type, Words string }
	// Chosen are the event types ticked in the form.
	Chosen map[string]bool
	// Secret is the signing secret just created or rotated, shown once,
	// and SecretFor the endpoint it signs for.
	Secret    string
	SecretFor *WebhookEndpoint
	CanAdmin  bool
}

func (s *server) webhooks(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderWebhooks(w, r, sess, &page{Notice: deliveryNotice(r)}, http.StatusOK, webhooksData{})
}

// renderWebhooks lists the endpoints. A member who is not an admin is
// refused the list by courier; the page then says who may manage them
// instead of failing.
func (s *server) renderWebhooks(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, d webhooksData) {
	if status == http.StatusServiceUnavailable {
		s.unavailable(w, r, &sess.Me)
		return
	}
	a, ok := s.loadAccount(w, r, sess)
	if !ok {
		return
	}
	d.EventTypes = webhookEventTypes
	if d.Chosen == nil {
		d.Chosen = map[string]bool{}
	}
	d.CanAdmin = roleRank[a.Role] >= roleRank["admin"]
	if d.CanAdmin {
		list, err := s.api.WebhookEndpoints(r.Context(), sess.Token, a.ID)
		if err != nil {
			s.fail(w, r, &sess.Me, err)
			return
		}
		d.Endpoints = list
	}
	p.Title, p.User, p.Account, p.Tab, p.Data = "Webhooks · "+a.Name, &sess.Me, a, "webhooks", d
	s.render(w, r, status, "webhooks", p)
}

func (s *server) createWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	rawURL := strings.TrimSpace(r.PostFormValue("url"))
	description := strings.TrimSpace(r.PostFormValue("description"))
	types := r.PostForm["event_types"]
	chosen := map[string]bool{}
	for _, t := range types {
		chosen[t] = true
	}
	form := map[string]string{"url": rawURL, "description": description}
	if len(types) == 0 {
		p := &page{Form: form, Error: "Please correct the fields marked below.",
			Errors: map[string]string{"event_types": "Tick at least one event to send to this endpoint."}}
		s.renderWebhooks(w, r, sess, p, http.StatusUnprocessableEntity, webhooksData{Chosen: chosen})
		return
	}
	e, secret, err := s.api.CreateWebhookEndpoint(r.Context(), sess.Token, r.PathValue("id"), rawURL, types, description)
	if err != nil {
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		p := &page{Form: form}
		status := formFailure(p, err)
		webhookFieldWords(p, err)
		if StatusOf(err) == http.StatusForbidden {
			p.Error = "Only an admin or an owner can manage webhooks."
		}
		s.renderWebhooks(w, r, sess, p, status, webhooksData{Chosen: chosen})
		return
	}
	// Rendered, not redirected: the secret is shown this once.
	s.renderWebhooks(w, r, sess, &page{Notice: "The endpoint was created. Copy its signing secret now; it is shown only once."},
		http.StatusCreated, webhooksData{Secret: secret, SecretFor: &e})
}

// webhookFieldWords replaces the generic words of courier's URL and
// event-type rules with what the user should do.
func webhookFieldWords(p *page, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		return
	}
	words := map[string]string{
		"url:https_required":   "The URL must start with https:// (plain http is allowed only to this machine, in development).",
		"url:private_address":  "The URL points at a private or loopback address, which the platform never calls.",
		"url:invalid":          "Enter a full URL, such as https://example.com/hooks, without a user name or password in it.",
		"url:required":         "Enter the URL the platform should call.",
		"event_types:unknown":  "Choose only events from the list.",
		"event_types:required": "Tick at least one event to send to this endpoint.",
		"description:invalid":  "The description is too long or contains characters that are not allowed.",
	}
	for field, rule := range ae.Fields {
		if w, ok := words[field+":"+rule]; ok {
			p.Errors[field] = w
		}
	}
}

// deliveryNotices are this file's confirmations after a redirect, by key,
// so no text from the query string reaches a page.
var deliveryNotices = map[string]string{
	"preferences":      "Your notification preferences were saved.",
	"webhook_disabled": "The endpoint was disabled: nothing is sent to it until it is enabled again.",
	"webhook_enabled":  "The endpoint was enabled.",
	"webhook_deleted":  "The endpoint was deleted.",
	"retried":          "The delivery is due again now; reload in a moment to see the attempt.",
}

func deliveryNotice(r *http.Request) string { return deliveryNotices[r.URL.Query().Get("done")] }

// endpointAction runs one change to an endpoint and returns to the list.
func (s *server) endpointAction(done string, act func(r *http.Request, sess *session, id, eid string) error) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		id, eid := r.PathValue("id"), r.PathValue("eid")
		if err := act(r, sess, id, eid); err != nil {
			if StatusOf(err) == http.StatusNotFound {
				s.notFound(w, r, &sess.Me)
				return
			}
			p := &page{}
			status := formFailure(p, err)
			if StatusOf(err) == http.StatusForbidden {
				p.Error = "Only an admin or an owner can manage webhooks."
			}
			s.renderWebhooks(w, r, sess, p, status, webhooksData{})
			return
		}
		http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/webhooks?done="+done, http.StatusSeeOther)
	}
}

func (s *server) disableWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	s.endpointAction("webhook_disabled", func(r *http.Request, sess *session, id, eid string) error {
		return s.api.SetWebhookDisabled(r.Context(), sess.Token, id, eid, true)
	})(w, r, sess)
}

func (s *server) enableWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	s.endpointAction("webhook_enabled", func(r *http.Request, sess *session, id, eid string) error {
		return s.api.SetWebhookDisabled(r.Context(), sess.Token, id, eid, false)
	})(w, r, sess)
}

func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	if r.PostFormValue("confirm") != "yes" {
		p := &page{Error: "Tick the box to confirm that the endpoint and its delivery log go for good."}
		s.renderWebhooks(w, r, sess, p, http.StatusUnprocessableEntity, webhooksData{})
		return
	}
	s.endpointAction("webhook_deleted", func(r *http.Request, sess *session, id, eid string) error {
		return s.api.DeleteWebhookEndpoint(r.Context(), sess.Token, id, eid)
	})(w, r, sess)
}

func (s *server) rotateWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	e, secret, err := s.api.RotateWebhookSecret(r.Context(), sess.Token, r.PathValue("id"), r.PathValue("eid"))
	if err != nil {
		s.endpointAction("", func(*http.Request, *session, string, string) error { return err })(w, r, sess)
		return
	}
	s.renderWebhooks(w, r, sess, &page{Notice: "The signing secret was replaced; the old one no longer signs. Copy the new one now; it is shown only once."},
		http.StatusOK, webhooksData{Secret: secret, SecretFor: &e})
}

// deliveriesData is the delivery log's content.
type deliveriesData struct {
	Endpoint   WebhookEndpoint
	Deliveries []Delivery
	Next       string
}

func (s *server) deliveries(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderDeliveries(w, r, sess, &page{Notice: deliveryNotice(r)}, http.StatusOK)
}

func (s *server) renderDeliveries(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	eid := r.PathValue("eid")
	a, e, ok := withAccount(s, w, r, sess, func(ctx context.Context, token, id string) (WebhookEndpoint, error) {
		return s.api.WebhookEndpoint(ctx, token, id, eid)
	})
	if !ok {
		return
	}
	list, next, err := s.api.WebhookDeliveries(r.Context(), sess.Token, a.ID, eid, r.URL.Query().Get("cursor"))
	if err != nil {
		if CodeOf(err) == "validation_failed" {
			s.render(w, r, http.StatusUnprocessableEntity, "error", &page{Title: "Not found", User: &sess.Me,
				Error: "This page of the delivery log does not exist. Open the log from its first page."})
			return
		}
		s.fail(w, r, &sess.Me, err)
		return
	}
	p.Title, p.User, p.Account, p.Tab = "Deliveries · "+a.Name, &sess.Me, a, "webhooks"
	p.Data = deliveriesData{Endpoint: e, Deliveries: list, Next: next}
	s.render(w, r, status, "deliveries", p)
}

func (s *server) retryDelivery(w http.ResponseWriter, r *http.Request, sess *session) {
	id, eid := r.PathValue("id"), r.PathValue("eid")
	if err := s.api.RetryDelivery(r.Context(), sess.Token, id, eid, r.PathValue("did")); err != nil {
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
		s.renderDeliveries(w, r, sess, p, status)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/webhooks/"+url.PathEscape(eid)+"/deliveries?done=retried", http.StatusSeeOther)
}

// pullCommands are the commands that log in and pull with a credential.
type pullCommands struct {
	Login, DockerPull, CranePull, OrasPull string
}

// credentialData is the credential part of the downloads page.
type credentialData struct {
	Credential RegistryCredential
	Version    string
	Commands   pullCommands
}

// commandsFor writes the commands for cred, pulling version. A registry on
// this machine is plain HTTP, which crane and oras are told.
func commandsFor(cred RegistryCredential, version string) pullCommands {
	ref := cred.Registry + "/" + cred.Repository + ":" + version
	crane, oras := "crane", "oras"
	host := cred.Registry
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	if host == "localhost" || host == "127.0.0.1" {
		crane, oras = "crane --insecure", "oras --plain-http"
	}
	auth := " -u " + cred.Username + " -p '" + cred.Password + "'"
	return pullCommands{
		Login:      "echo '" + cred.Password + "' | docker login " + cred.Registry + " -u " + cred.Username + " --password-stdin",
		DockerPull: "docker pull " + ref,
		CranePull:  crane + " auth login " + cred.Registry + auth + " && " + crane + " pull " + ref + " " + cred.Repository + ".tar",
		OrasPull:   oras + " login " + cred.Registry + auth + " && " + oras + " pull " + ref,
	}
}

// newestIn is the newest released version of product inside rng, or ""
// when the account sees none.
func newestIn(releases []Release, product string, rng *string) string {
	within := semver.Any()
	if rng != nil && *rng != "" {
		parsed, err := semver.ParseRange(*rng)
		if err != nil {
			return ""
		}
		within = parsed
	}
	var best *semver.Version
	for _, rel := range releases {
		if rel.Product != product {
			continue
		}
		v, err := semver.ParseVersion(rel.Version)
		if err != nil || !within.Contains(v) {
			continue
		}
		if best == nil || v.Compare(*best) > 0 {
			best = &v
		}
	}
	if best == nil {
		return ""
	}
	return best.String()
}

// exchange trades the capability on the page for a registry credential
// and shows it once, with the commands that pull with it.
func (s *server) exchange(w http.ResponseWriter, r *http.Request, sess *session) {
	capability := strings.TrimSpace(r.PostFormValue("capability"))
	if capability == "" {
		s.renderDownloads(w, r, sess, &page{Form: map[string]string{"artifact": "platform"},
			Error: "Get a download capability first, then exchange it here."}, http.StatusUnprocessableEntity, nil)
		return
	}
	// The account is read first: a page that cannot be shown must not
	// spend the single-use capability on a password nobody sees.
	if _, ok := s.loadAccount(w, r, sess); !ok {
		return
	}
	cred, err := s.api.Exchange(r.Context(), capability)
	if err != nil {
		p := &page{Form: map[string]string{"artifact": "platform"}}
		status := formFailure(p, err)
		switch CodeOf(err) {
		case "capability_used":
			p.Error = "This capability has already been exchanged. Get a new one below."
		case "capability_expired":
			p.Error = "This capability has expired. Get a new one below."
		case "not_found":
			p.Error, status = "This capability is not valid. Get a new one below.", http.StatusNotFound
		}
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderDownloads(w, r, sess, p, status, nil)
		return
	}
	// The newest release in range names the tag in the commands; the
	// page still works when releases cannot be read.
	version := "VERSION"
	if rels, err := s.api.AccountReleases(r.Context(), sess.Token, r.PathValue("id")); err == nil {
		if v := newestIn(rels, cred.Repository, cred.VersionRange); v != "" {
			version = v
		}
	}
	p := &page{Form: map[string]string{"artifact": cred.Repository},
		Notice: "Your registry credential is ready. Copy the password now; it is shown only once."}
	s.renderDownloadsWith(w, r, sess, p, http.StatusCreated, nil,
		&credentialData{Credential: cred, Version: version, Commands: commandsFor(cred, version)})
}

// pullsData is a page of the pull record: Older says it is not the
// newest, Next is the cursor of the page after it.
type pullsData struct {
	Pulls []Pull
	Older bool
	Next  string
}

// Paged says the page needs links to others.
func (d pullsData) Paged() bool { return d.Older || d.Next != "" }

func (s *server) pulls(w http.ResponseWriter, r *http.Request, sess *session) {
	cursor := r.URL.Query().Get("cursor")
	a, pp, ok := withAccount(s, w, r, sess, func(ctx context.Context, token, id string) (PullPage, error) {
		return s.api.Pulls(ctx, token, id, cursor)
	})
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "pulls", &page{Title: "Pulls · " + a.Name, User: &sess.Me, Account: a,
		Tab: "pulls", Data: pullsData{Pulls: pp.Pulls, Older: cursor != "", Next: pp.Next}})
}
