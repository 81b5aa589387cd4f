package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
)

type handlers struct {
	svc    *box.Service
	logger *slog.Logger
}

// bearer returns the request's bearer token, or "" when it carries none.
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	token = strings.TrimSpace(token)
	if strings.ContainsAny(token, " \t") {
		return ""
	}
	return token
}

// staff runs the staff check, answering its failure; ok reports success.
// It runs before the body is read: its failures come before anything else.
func (h *handlers) staff(w http.ResponseWriter, r *http.Request) (box.Staff, bool) {
	s, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		writeError(w, r, h.logger, err)
		return box.Staff{}, false
	}
	return s, true
}

// publisher runs the publishing check: a staff session, or a staff key
// with releases:publish.
func (h *handlers) publisher(w http.ResponseWriter, r *http.Request) (box.Staff, bool) {
	s, err := h.svc.Publisher(r.Context(), bearer(r))
	if err != nil {
		writeError(w, r, h.logger, err)
		return box.Staff{}, false
	}
	return s, true
}

// member runs the membership check of the path's account; withUser also
// resolves the caller's user id.
func (h *handlers) member(w http.ResponseWriter, r *http.Request, withUser bool) (box.Member, bool) {
	check := h.svc.Member
	if withUser {
		check = h.svc.MemberUser
	}
	m, err := check(r.Context(), bearer(r), r.PathValue("account_id"))
	if err == nil {
		err = m.Allow(keyScopes[r.Pattern])
	}
	if err != nil {
		writeError(w, r, h.logger, err)
		return box.Member{}, false
	}
	return m, true
}

// keyScopes is the scope an API key needs on each account route
// (identity-lifecycle.md §5); a route not named is closed to keys.
var keyScopes = map[string]string{
	"GET /v1/accounts/{account_id}/entitlements":      "entitlements:read",
	"GET /v1/accounts/{account_id}/holdings":          "entitlements:read",
	"POST /v1/accounts/{account_id}/artifact_fetches": "artifacts:fetch",
	"GET /v1/accounts/{account_id}/releases":          "releases:read",
	"POST /v1/accounts/{account_id}/approvals":        "releases:approve",
	"GET /v1/accounts/{account_id}/audit-events":      "account:read",
	"POST /v1/accounts/{account_id}/installations":    scopeInstallations,
}

// scopeInstallations lets an API key activate, heartbeat, deactivate and
// license installations: what the customer's software does.
const scopeInstallations = "installations:write"

// idempotent wraps next in the Idempotency-Key layer for userID (or
// returns it as it is when box keeps no records).
type idempotent func(userID string, next http.Handler) http.Handler

// asStaff runs the staff check first, then fn through once with the staff
// member as the record's caller.
func (h *handlers) asStaff(once idempotent, fn func(http.ResponseWriter, *http.Request, box.Staff)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := h.staff(w, r)
		if !ok {
			return
		}
		once(s.UserID(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fn(w, r, s) })).ServeHTTP(w, r)
	})
}

// asPublisher is asStaff with the publishing check, which admits a staff
// key with releases:publish as well as a staff session.
func (h *handlers) asPublisher(once idempotent, fn func(http.ResponseWriter, *http.Request, box.Staff)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := h.publisher(w, r)
		if !ok {
			return
		}
		once(s.UserID(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fn(w, r, s) })).ServeHTTP(w, r)
	})
}

// asMember runs the membership check first, then fn through once with the
// member as the record's caller. A request carrying Idempotency-Key needs
// the caller's user id even where fn does not, since records are the
// user's, not the token's: it is resolved then.
func (h *handlers) asMember(withUser bool, once idempotent, fn func(http.ResponseWriter, *http.Request, box.Member)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keyed := r.Header.Get(idempotency.Header) != ""
		m, ok := h.member(w, r, withUser || keyed)
		if !ok {
			return
		}
		once(m.UserID(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fn(w, r, m) })).ServeHTTP(w, r)
	})
}

func (h *handlers) decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	if err := httpx.DecodeJSON(w, r, dst); err != nil {
		writeError(w, r, h.logger, err)
		return false
	}
	return true
}

// Operator entitlements.

type entitlementJSON struct {
	ID           int64      `json:"id"`
	AccountID    string     `json:"account_id"`
	Product      string     `json:"product"`
	Status       string     `json:"status"`
	VersionRange *string    `json:"version_range"`
	Source       *string    `json:"source"`
	Reference    *string    `json:"reference"`
	GrantedBy    string     `json:"granted_by"`
	RevokedBy    *string    `json:"revoked_by"`
	GrantedAt    time.Time  `json:"granted_at"`
	RevokedAt    *time.Time `json:"revoked_at"`
	// MaxInstallations is null for unlimited.
	MaxInstallations *int `json:"max_installations"`
}

func entitlementView(e box.Entitlement) entitlementJSON {
	return entitlementJSON{
		ID: e.ID, AccountID: e.AccountID, Product: e.Product, Status: e.Status,
		VersionRange: e.VersionRange, Source: e.Source, Reference: e.Reference,
		GrantedBy: e.GrantedBy, RevokedBy: e.RevokedBy, GrantedAt: e.GrantedAt, RevokedAt: e.RevokedAt,
		MaxInstallations: e.MaxInstallations,
	}
}

type entitlementResponse struct {
	Entitlement entitlementJSON `json:"entitlement"`
}

type duplicateResponse struct {
	Entitlement entitlementJSON `json:"entitlement"`
	Duplicate   bool            `json:"duplicate"`
}

func (h *handlers) grant(w http.ResponseWriter, r *http.Request, staff box.Staff) {
	var body struct {
		AccountID    *string `json:"account_id"`
		Product      *string `json:"product"`
		VersionRange *string `json:"version_range"`
		Source       *string `json:"source"`
		Reference    *string `json:"reference"`
		// MaxInstallations is null or absent for unlimited.
		MaxInstallations *int64 `json:"max_installations"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	ent, created, err := h.svc.Grant(r.Context(), staff, box.GrantInput{
		AccountID: body.AccountID, Product: body.Product, VersionRange: body.VersionRange,
		Source: body.Source, Reference: body.Reference, MaxInstallations: body.MaxInstallations,
	})
	switch {
	case err != nil:
		writeError(w, r, h.logger, err)
	case created:
		httpx.WriteJSON(w, http.StatusCreated, entitlementResponse{entitlementView(ent)})
	default:
		httpx.WriteJSON(w, http.StatusConflict, duplicateResponse{entitlementView(ent), true})
	}
}

func (h *handlers) revoke(w http.ResponseWriter, r *http.Request) {
	staff, ok := h.staff(w, r)
	if !ok {
		return
	}
	ent, err := h.svc.Revoke(r.Context(), staff, r.PathValue("id"))
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, entitlementResponse{entitlementView(ent)})
}

// nullable turns "" into a JSON null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h *handlers) listEntitlements(w http.ResponseWriter, r *http.Request) {
	staff, ok := h.staff(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	page, err := h.svc.List(r.Context(), staff, box.ListQuery{
		AccountID: q.Get("account_id"), Product: q.Get("product"), Status: q.Get("status"),
		Cursor: q.Get("cursor"), Limit: q.Get("limit"),
	})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Entitlements []entitlementJSON `json:"entitlements"`
		NextCursor   *string           `json:"next_cursor"`
	}{Entitlements: make([]entitlementJSON, 0, len(page.Entitlements)), NextCursor: nullable(page.NextCursor)}
	for _, e := range page.Entitlements {
		out.Entitlements = append(out.Entitlements, entitlementView(e))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// Customer entitlements and artifact checks.

// customerEntitlementJSON is exactly the seven fields of the customer view:
// no id, no version_range, no actors.
type customerEntitlementJSON struct {
	AccountID string     `json:"account_id"`
	Product   string     `json:"product"`
	Status    string     `json:"status"`
	Source    *string    `json:"source"`
	Reference *string    `json:"reference"`
	GrantedAt time.Time  `json:"granted_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

func customerView(e box.Entitlement) customerEntitlementJSON {
	return customerEntitlementJSON{
		AccountID: e.AccountID, Product: e.Product, Status: e.Status, Source: e.Source,
		Reference: e.Reference, GrantedAt: e.GrantedAt, RevokedAt: e.RevokedAt,
	}
}

func (h *handlers) customerEntitlements(w http.ResponseWriter, r *http.Request) {
	m, ok := h.member(w, r, false)
	if !ok {
		return
	}
	ents, err := h.svc.CustomerEntitlements(r.Context(), m)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Entitlements []customerEntitlementJSON `json:"entitlements"`
	}{Entitlements: make([]customerEntitlementJSON, 0, len(ents))}
	for _, e := range ents {
		out.Entitlements = append(out.Entitlements, customerView(e))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// holdingJSON is one active entitlement as its account reads it: no id,
// no source or reference, no actors.
type holdingJSON struct {
	Product      string    `json:"product"`
	VersionRange *string   `json:"version_range"`
	GrantedAt    time.Time `json:"granted_at"`
}

func (h *handlers) holdings(w http.ResponseWriter, r *http.Request) {
	m, ok := h.member(w, r, false)
	if !ok {
		return
	}
	ents, err := h.svc.Holdings(r.Context(), m)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Holdings []holdingJSON `json:"holdings"`
	}{Holdings: make([]holdingJSON, 0, len(ents))}
	for _, e := range ents {
		out.Holdings = append(out.Holdings, holdingJSON{Product: e.Product, VersionRange: e.VersionRange, GrantedAt: e.GrantedAt})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

type capabilityJSON struct {
	Token        string    `json:"token"`
	AccountID    string    `json:"account_id"`
	Artifact     string    `json:"artifact"`
	VersionRange *string   `json:"version_range"`
	ExpiresAt    time.Time `json:"expires_at"`
}

func (h *handlers) fetchArtifact(w http.ResponseWriter, r *http.Request, m box.Member) {
	var body struct {
		Artifact     *string `json:"artifact"`
		VersionRange *string `json:"version_range"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	c, err := h.svc.FetchArtifact(r.Context(), m, box.FetchInput{Artifact: body.Artifact, VersionRange: body.VersionRange})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, struct {
		Capability capabilityJSON `json:"capability"`
	}{capabilityJSON{Token: c.Token, AccountID: c.AccountID, Artifact: c.Artifact, VersionRange: c.VersionRange, ExpiresAt: c.ExpiresAt}})
}

func (h *handlers) redeem(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token *string `json:"token"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	red, err := h.svc.Redeem(r.Context(), body.Token)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		AccountID    string  `json:"account_id"`
		Artifact     string  `json:"artifact"`
		VersionRange *string `json:"version_range"`
	}{red.AccountID, red.Artifact, red.VersionRange})
}

// Releases, approvals, claims and the timeline.

type releaseJSON struct {
	ID          int64     `json:"id"`
	Product     string    `json:"product"`
	Version     string    `json:"version"`
	Notes       *string   `json:"notes"`
	PublishedBy string    `json:"published_by"`
	PublishedAt time.Time `json:"published_at"`
}

func releaseView(rel box.Release) releaseJSON {
	return releaseJSON{ID: rel.ID, Product: rel.Product, Version: rel.Version, Notes: rel.Notes,
		PublishedBy: rel.PublishedBy, PublishedAt: rel.PublishedAt}
}

func releaseViews(rels []box.Release) []releaseJSON {
	out := make([]releaseJSON, 0, len(rels))
	for _, rel := range rels {
		out = append(out, releaseView(rel))
	}
	return out
}

func (h *handlers) publishRelease(w http.ResponseWriter, r *http.Request, staff box.Staff) {
	var body struct {
		Product *string `json:"product"`
		Version *string `json:"version"`
		Notes   *string `json:"notes"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	rel, err := h.svc.PublishRelease(r.Context(), staff, box.ReleaseInput{Product: body.Product, Version: body.Version, Notes: body.Notes})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, struct {
		Release releaseJSON `json:"release"`
	}{releaseView(rel)})
}

func (h *handlers) listReleases(w http.ResponseWriter, r *http.Request) {
	staff, ok := h.staff(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	page, err := h.svc.Releases(r.Context(), staff, box.ReleaseQuery{Product: q.Get("product"), Cursor: q.Get("cursor"), Limit: q.Get("limit")})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Releases   []releaseJSON `json:"releases"`
		NextCursor *string       `json:"next_cursor"`
	}{releaseViews(page.Releases), nullable(page.NextCursor)})
}

func (h *handlers) accountReleases(w http.ResponseWriter, r *http.Request) {
	m, ok := h.member(w, r, false)
	if !ok {
		return
	}
	rels, err := h.svc.AccountReleases(r.Context(), m)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Releases []releaseJSON `json:"releases"`
	}{releaseViews(rels)})
}

type approvalJSON struct {
	ID         int64     `json:"id"`
	AccountID  string    `json:"account_id"`
	ReleaseID  int64     `json:"release_id"`
	Product    string    `json:"product"`
	Version    string    `json:"version"`
	ApprovedBy string    `json:"approved_by"`
	CreatedAt  time.Time `json:"created_at"`
}

func (h *handlers) approve(w http.ResponseWriter, r *http.Request, m box.Member) {
	var body struct {
		ReleaseID *int64 `json:"release_id"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	a, created, err := h.svc.Approve(r.Context(), m, box.ApproveInput{ReleaseID: body.ReleaseID})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpx.WriteJSON(w, status, struct {
		Approval approvalJSON `json:"approval"`
	}{approvalJSON{ID: a.ID, AccountID: a.AccountID, ReleaseID: a.ReleaseID, Product: a.Product,
		Version: a.Version, ApprovedBy: a.ApprovedBy, CreatedAt: a.CreatedAt}})
}

type claimJSON struct {
	ID            int64     `json:"id"`
	AccountID     string    `json:"account_id"`
	Product       string    `json:"product"`
	ClaimedBy     string    `json:"claimed_by"`
	EntitlementID int64     `json:"entitlement_id"`
	CreatedAt     time.Time `json:"created_at"`
}

// claim takes no body: what is claimed is always the free kit.
func (h *handlers) claim(w http.ResponseWriter, r *http.Request, m box.Member) {
	c, ent, err := h.svc.Claim(r.Context(), m)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Claim       *claimJSON              `json:"claim"`
		Entitlement customerEntitlementJSON `json:"entitlement"`
	}{Entitlement: customerView(ent)}
	status := http.StatusOK
	if c != nil {
		status = http.StatusCreated
		out.Claim = &claimJSON{ID: c.ID, AccountID: c.AccountID, Product: c.Product, ClaimedBy: c.ClaimedBy,
			EntitlementID: c.EntitlementID, CreatedAt: c.CreatedAt}
	}
	httpx.WriteJSON(w, status, out)
}

// entitlementEventJSON is one row of the staff's audit trail.
type entitlementEventJSON struct {
	ID            int64     `json:"id"`
	Action        string    `json:"action"`
	EntitlementID int64     `json:"entitlement_id"`
	AccountID     string    `json:"account_id"`
	Product       string    `json:"product"`
	ActorUserID   string    `json:"actor_user_id"`
	OccurredAt    time.Time `json:"occurred_at"`
}

// auditTrail is the operator console's read of every grant and revoke.
func (h *handlers) auditTrail(w http.ResponseWriter, r *http.Request) {
	staff, ok := h.staff(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	page, err := h.svc.AuditTrail(r.Context(), staff, q.Get("cursor"), q.Get("limit"))
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Events     []entitlementEventJSON `json:"events"`
		NextCursor *string                `json:"next_cursor"`
	}{Events: make([]entitlementEventJSON, 0, len(page.Events)), NextCursor: nullable(page.NextCursor)}
	for _, ev := range page.Events {
		out.Events = append(out.Events, entitlementEventJSON{ID: ev.ID, Action: ev.Action, EntitlementID: ev.EntitlementID,
			AccountID: ev.AccountID, Product: ev.Product, ActorUserID: ev.ActorUserID, OccurredAt: ev.OccurredAt})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

type auditEventJSON struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	OccurredAt  time.Time `json:"occurred_at"`
	ActorUserID string    `json:"actor_user_id"`
	ReleaseID   *int64    `json:"release_id,omitempty"`
	ApprovalID  *int64    `json:"approval_id,omitempty"`
	Product     string    `json:"product"`
	Version     string    `json:"version"`
}

func (h *handlers) timeline(w http.ResponseWriter, r *http.Request) {
	m, ok := h.member(w, r, false)
	if !ok {
		return
	}
	page, err := h.svc.Timeline(r.Context(), m, r.URL.Query().Get("cursor"))
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Events     []auditEventJSON `json:"events"`
		NextCursor *string          `json:"next_cursor"`
	}{Events: make([]auditEventJSON, 0, len(page.Events)), NextCursor: nullable(page.NextCursor)}
	for _, ev := range page.Events {
		item := auditEventJSON{ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt, ActorUserID: ev.ActorUserID,
			Product: ev.Product, Version: ev.Version}
		if ev.ReleaseID != 0 {
			id := ev.ReleaseID
			item.ReleaseID = &id
		}
		if ev.ApprovalID != 0 {
			id := ev.ApprovalID
			item.ApprovalID = &id
		}
		out.Events = append(out.Events, item)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}
