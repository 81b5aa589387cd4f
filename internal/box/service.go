package box

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/semver"
)

// DefaultCapabilityTTL is how long an issued capability can be redeemed.
const DefaultCapabilityTTL = 5 * time.Minute

// Service is box's application logic. Its methods take a Staff or a Member,
// which only the identity checks below produce, so no operation can run
// without the round trip that authorizes it.
type Service struct {
	store         Store
	identity      Identity
	capabilityTTL time.Duration
	random        io.Reader
	licensing     Licensing
}

// NewService returns a service over store and identity; capabilities live
// for capabilityTTL (DefaultCapabilityTTL when zero).
func NewService(store Store, identity Identity, capabilityTTL time.Duration) *Service {
	if capabilityTTL <= 0 {
		capabilityTTL = DefaultCapabilityTTL
	}
	s := &Service{store: store, identity: identity, capabilityTTL: capabilityTTL, random: rand.Reader}
	return s.WithLicensing(Licensing{})
}

// Staff is a caller identity confirmed as platform staff.
type Staff struct{ userID string }

// UserID is the staff member's identity user id.
func (s Staff) UserID() string { return s.userID }

// Member is a caller confirmed as a member of one account.
type Member struct {
	accountID string
	role      string
	scopes    []string
	userID    string
}

// RoleAPIKey is the role identity reports for an API key reading its own
// account (identity-lifecycle.md §5).
const RoleAPIKey = "api_key"

// Allow checks that the caller may act with scope: a person may (roles are
// identity's to enforce); an API key only within its scopes. Errors:
// insufficient_scope.
func (m Member) Allow(scope string) error {
	if m.role != RoleAPIKey || (scope != "" && slices.Contains(m.scopes, scope)) {
		return nil
	}
	return errs.New(CodeInsufficientScope, "this API key's scopes do not permit this request")
}

// AccountID is the account the membership was checked for (lower case).
func (m Member) AccountID() string { return m.accountID }

// Role is the caller's role in the account, as identity reported it.
func (m Member) Role() string { return m.role }

// UserID is the caller's user id; empty unless MemberUser resolved it.
func (m Member) UserID() string { return m.userID }

func unauthenticated() error { return errs.New(CodeUnauthenticated, MsgUnauthenticated) }
func notFound() error        { return errs.New(CodeNotFound, MsgNotFound) }

// Staff checks with identity that token belongs to platform staff.
// Errors: unauthenticated, forbidden, unavailable.
func (s *Service) Staff(ctx context.Context, token string) (Staff, error) {
	if token == "" {
		return Staff{}, unauthenticated()
	}
	id, err := s.identity.OperatorMe(ctx, token)
	if err != nil {
		return Staff{}, err
	}
	return Staff{userID: id}, nil
}

// Publisher checks with identity that token may publish a release: a
// staff member's session, or a staff key with scope releases:publish,
// which a pipeline holds instead of a person's session (licensing.md
// section 4). Such a key passes no other staff check. Errors:
// unauthenticated, forbidden, unavailable.
func (s *Service) Publisher(ctx context.Context, token string) (Staff, error) {
	if token == "" {
		return Staff{}, unauthenticated()
	}
	id, err := s.identity.Publisher(ctx, token)
	if err != nil {
		return Staff{}, err
	}
	return Staff{userID: id}, nil
}

// Member checks with identity that token belongs to a member of accountID.
// A malformed account id names no account and is not sent to identity.
// Errors: unauthenticated, not_found, unavailable.
func (s *Service) Member(ctx context.Context, token, accountID string) (Member, error) {
	if token == "" {
		return Member{}, unauthenticated()
	}
	id, ok := ids.Parse(accountID)
	if !ok {
		return Member{}, notFound()
	}
	role, scopes, err := s.identity.AccountRole(ctx, token, id)
	if err != nil {
		return Member{}, err
	}
	return Member{accountID: id, role: role, scopes: scopes}, nil
}

// MemberUser is Member plus the caller's user id, for the operations that
// record who acted. Errors: unauthenticated, not_found, unavailable.
func (s *Service) MemberUser(ctx context.Context, token, accountID string) (Member, error) {
	m, err := s.Member(ctx, token, accountID)
	if err != nil {
		return Member{}, err
	}
	if m.role == RoleAPIKey {
		// An API key is no user: what records its actor (approvals,
		// claims, Idempotency-Key records) is not open to it.
		return Member{}, m.Allow("")
	}
	if m.userID, err = s.identity.UserID(ctx, token); err != nil {
		return Member{}, err
	}
	return m, nil
}

// GrantInput is the body of an operator grant; nil means absent.
type GrantInput struct {
	AccountID    *string
	Product      *string
	VersionRange *string
	Source       *string
	Reference    *string
	// MaxInstallations caps the grant's installations; nil is unlimited.
	MaxInstallations *int64
}

// Grant creates an active entitlement with its grant event. When the
// account already holds an active row for the product, it returns that row
// with created false and writes nothing, also when the database's unique
// index settles a race. Errors: unprocessable.
func (s *Service) Grant(ctx context.Context, staff Staff, in GrantInput) (ent Entitlement, created bool, err error) {
	var p problems
	ne := NewEntitlement{
		AccountID: p.accountID("account_id", in.AccountID),
		Product:   p.product("product", in.Product, ProductKit),
		GrantedBy: staff.userID,
	}
	_, ne.VersionRange = p.versionRange("version_range", in.VersionRange)
	ne.Source = p.text("source", in.Source, maxSourceLen, false)
	ne.Reference = p.text("reference", in.Reference, maxReferenceLen, false)
	if in.MaxInstallations != nil {
		if n := *in.MaxInstallations; n < 1 || n > MaxInstallationsLimit {
			p.add("max_installations", "range", "must be an integer from 1 to "+strconv.Itoa(MaxInstallationsLimit)+", or null for unlimited")
		} else {
			limit := int(n)
			ne.MaxInstallations = &limit
		}
	}
	if err := p.err(); err != nil {
		return Entitlement{}, false, err
	}
	return s.store.Grant(ctx, ne)
}

// Revoke revokes the entitlement with the decimal id; revoking a revoked
// row returns it unchanged and writes nothing. Errors: not_found (also for
// an id that is not a positive integer).
func (s *Service) Revoke(ctx context.Context, staff Staff, id string) (Entitlement, error) {
	n, ok := parseID(id)
	if !ok {
		return Entitlement{}, notFound()
	}
	return s.store.Revoke(ctx, n, staff.userID)
}

// ListQuery is the operator list's query string.
type ListQuery struct {
	AccountID, Product, Status, Cursor, Limit string
}

// EntitlementPage is one page of the operator list. NextCursor is empty on
// the last page.
type EntitlementPage struct {
	Entitlements []Entitlement
	NextCursor   string
}

// AuditPage is one page of the audit trail of grants and revokes.
// NextCursor is empty on the last page.
type AuditPage struct {
	Events     []EntitlementEvent
	NextCursor string
}

// AuditTrail is the operator console's read of every grant and revoke,
// newest first: cursor and limit as List takes them. Errors:
// unprocessable.
func (s *Service) AuditTrail(ctx context.Context, _ Staff, cursor, limit string) (AuditPage, error) {
	var p problems
	before, n := p.cursor(cursor), p.limit(limit)
	if err := p.err(); err != nil {
		return AuditPage{}, err
	}
	rows, err := s.store.EntitlementEvents(ctx, before, n+1)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Events: rows}
	if len(rows) > n {
		page.Events = rows[:n]
		page.NextCursor = encodeCursor(page.Events[n-1].ID)
	}
	return page, nil
}

// List lists entitlements newest first. Errors: unprocessable.
func (s *Service) List(ctx context.Context, staff Staff, q ListQuery) (EntitlementPage, error) {
	var p problems
	f := EntitlementFilter{
		Product: p.enum("product", q.Product, Products...),
		Status:  p.enum("status", q.Status, StatusActive, StatusRevoked),
		Before:  p.cursor(q.Cursor),
		Limit:   p.limit(q.Limit),
	}
	if q.AccountID != "" {
		f.AccountID = p.accountID("account_id", &q.AccountID)
	}
	if err := p.err(); err != nil {
		return EntitlementPage{}, err
	}
	f.Limit++ // one more than a page tells whether another page exists
	rows, err := s.store.Entitlements(ctx, f)
	if err != nil {
		return EntitlementPage{}, err
	}
	page := EntitlementPage{Entitlements: rows}
	if len(rows) == f.Limit {
		page.Entitlements = rows[:f.Limit-1]
		page.NextCursor = encodeCursor(page.Entitlements[len(page.Entitlements)-1].ID)
	}
	return page, nil
}

// CustomerEntitlements lists what a member may see of the account's
// entitlements: active kit rows only.
func (s *Service) CustomerEntitlements(ctx context.Context, m Member) ([]Entitlement, error) {
	rows, err := s.store.ActiveEntitlements(ctx, m.accountID)
	if err != nil {
		return nil, err
	}
	out := []Entitlement{}
	for _, e := range rows {
		if e.Product == ProductKit && e.Status == StatusActive {
			out = append(out, e)
		}
	}
	return out, nil
}

// Holdings lists every active entitlement of the account, oldest first:
// the customer's read of what it holds (licensing.md §1), with nothing
// about money in it (the handler serializes only product, range and date).
func (s *Service) Holdings(ctx context.Context, m Member) ([]Entitlement, error) {
	return s.store.ActiveEntitlements(ctx, m.accountID)
}

// describe names a range in a denial message.
func describe(r semver.Range) string {
	if r.IsAny() {
		return "(every version)"
	}
	return strconv.Quote(r.String())
}

// Authorize is the one coverage rule of artifact checks, release listings
// and approvals: the account needs an active entitlement for the product
// whose range admits every version the request admits.
// Errors: entitlement_required, version_not_granted, and an internal error
// for a stored range that no longer parses.
func Authorize(product string, requested semver.Range, e *Entitlement) error {
	if e == nil || e.Status != StatusActive || e.Product != product {
		return errs.New(CodeEntitlementRequired, "the account holds no active entitlement for "+product)
	}
	granted, err := e.Range()
	if err != nil {
		// A range box cannot read admits nothing: fail closed, loudly.
		return fmt.Errorf("entitlement %d has an unreadable version_range: %w", e.ID, err)
	}
	if !granted.Covers(requested) {
		return errs.New(CodeVersionNotGranted, fmt.Sprintf(
			"the requested version range %s of %s is not covered by the granted range %s",
			describe(requested), product, describe(granted)))
	}
	return nil
}

// FetchInput is the body of an artifact check.
type FetchInput struct {
	Artifact     *string
	VersionRange *string
}

// FetchArtifact checks that the account holds the artifact at the requested
// range and issues a single-use capability bound to (account, artifact,
// range). Errors: unprocessable, entitlement_required, version_not_granted.
func (s *Service) FetchArtifact(ctx context.Context, m Member, in FetchInput) (Capability, error) {
	var p problems
	artifact := p.product("artifact", in.Artifact, "")
	requested, rangeText := p.versionRange("version_range", in.VersionRange)
	if err := p.err(); err != nil {
		return Capability{}, err
	}
	token, selector, err := newCapabilityToken(s.random)
	if err != nil {
		return Capability{}, err
	}
	nc := NewCapability{Selector: selector, Digest: TokenDigest(token), AccountID: m.accountID, Artifact: artifact, VersionRange: rangeText, TTL: s.capabilityTTL}
	expires, err := s.store.IssueCapability(ctx, nc, func(e *Entitlement) error {
		return Authorize(artifact, requested, e)
	})
	if err != nil {
		return Capability{}, err
	}
	return Capability{Token: token, AccountID: m.accountID, Artifact: artifact, VersionRange: rangeText, ExpiresAt: expires}, nil
}

// Redeem consumes a capability token. It needs no caller identity: the
// token is the credential. Errors: unprocessable (no token), not_found,
// capability_used, capability_expired.
func (s *Service) Redeem(ctx context.Context, token *string) (Redemption, error) {
	if blank(token) {
		var p problems
		p.add("token", "required", "is required")
		return Redemption{}, p.err()
	}
	selector, ok := capabilitySelector(*token)
	if !ok {
		return Redemption{}, errs.New(CodeNotFound, MsgNotFound)
	}
	return s.store.RedeemCapability(ctx, selector, TokenDigest(*token))
}

// ReleaseInput is the body of a release publication.
type ReleaseInput struct {
	Product *string
	Version *string
	Notes   *string
}

// PublishRelease records a release. Errors: unprocessable, conflict.
func (s *Service) PublishRelease(ctx context.Context, staff Staff, in ReleaseInput) (Release, error) {
	var p problems
	nr := NewRelease{
		Product:     p.product("product", in.Product, ""),
		Notes:       p.text("notes", in.Notes, maxNotesLen, true),
		PublishedBy: staff.userID,
	}
	if blank(in.Version) {
		p.add("version", "required", "is required")
	} else if v, err := semver.ParseVersion(*in.Version); err != nil {
		p.add("version", "semver", "must be a version X.Y.Z")
	} else {
		nr.Version = v.String()
	}
	if err := p.err(); err != nil {
		return Release{}, err
	}
	return s.store.CreateRelease(ctx, nr)
}

// ReleaseQuery is the operator release list's query string.
type ReleaseQuery struct {
	Product, Cursor, Limit string
}

// ReleasePage is one page of the operator release list.
type ReleasePage struct {
	Releases   []Release
	NextCursor string
}

// Releases lists releases newest first. Errors: unprocessable.
func (s *Service) Releases(ctx context.Context, staff Staff, q ReleaseQuery) (ReleasePage, error) {
	var p problems
	f := ReleaseFilter{
		Product: p.enum("product", q.Product, Products...),
		Before:  p.cursor(q.Cursor),
		Limit:   p.limit(q.Limit),
	}
	if err := p.err(); err != nil {
		return ReleasePage{}, err
	}
	f.Limit++
	rows, err := s.store.Releases(ctx, f)
	if err != nil {
		return ReleasePage{}, err
	}
	page := ReleasePage{Releases: rows}
	if len(rows) == f.Limit {
		page.Releases = rows[:f.Limit-1]
		page.NextCursor = encodeCursor(page.Releases[len(page.Releases)-1].ID)
	}
	return page, nil
}

// releaseRange is the exact range of one release version.
func releaseRange(r Release) (semver.Range, error) {
	return semver.ParseRange(r.Version)
}

// AccountReleases lists, newest first, the releases the account's active
// entitlements cover, by the rule of Authorize.
func (s *Service) AccountReleases(ctx context.Context, m Member) ([]Release, error) {
	ents, err := s.store.ActiveEntitlements(ctx, m.accountID)
	if err != nil {
		return nil, err
	}
	byProduct := make(map[string]*Entitlement, len(ents))
	products := make([]string, 0, len(ents))
	for i := range ents {
		byProduct[ents[i].Product] = &ents[i]
		products = append(products, ents[i].Product)
	}
	out := []Release{}
	if len(products) == 0 {
		return out, nil
	}
	rels, err := s.store.ReleasesOf(ctx, products)
	if err != nil {
		return nil, err
	}
	for _, r := range rels {
		rr, err := releaseRange(r)
		if err != nil {
			continue
		}
		if Authorize(r.Product, rr, byProduct[r.Product]) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// ApproveInput is the body of an approval.
type ApproveInput struct {
	ReleaseID *int64
}

// Approve records the member's approval of a release the account's active
// entitlement covers; approving the same release again returns the first
// approval with created false. m must come from MemberUser.
// Errors: unprocessable, entitlement_required, version_not_granted.
func (s *Service) Approve(ctx context.Context, m Member, in ApproveInput) (Approval, bool, error) {
	if in.ReleaseID == nil || *in.ReleaseID <= 0 {
		var p problems
		if in.ReleaseID == nil {
			p.add("release_id", "required", "is required")
		} else {
			p.add("release_id", "positive", "must be a positive integer")
		}
		return Approval{}, false, p.err()
	}
	return s.store.Approve(ctx, m.accountID, *in.ReleaseID, m.userID, func(r Release, e *Entitlement) error {
		rr, err := releaseRange(r)
		if err != nil {
			return fmt.Errorf("stored release %d has version %q: %w", r.ID, r.Version, err)
		}
		return Authorize(r.Product, rr, e)
	})
}

// Claim grants the account the free kit, attributed to the claimant, or
// returns the active kit row with a nil claim when one exists. m must come
// from MemberUser.
func (s *Service) Claim(ctx context.Context, m Member) (*Claim, Entitlement, error) {
	return s.store.Claim(ctx, m.accountID, m.userID)
}

// Timeline returns a page of the account's audit timeline: releases of
// the products it holds and its approvals, newest first, TimelineLimit a
// page; cursor ("" for the newest) is a page's NextCursor. Errors:
// unprocessable (a cursor this service did not give).
func (s *Service) Timeline(ctx context.Context, m Member, cursor string) (TimelinePage, error) {
	var p problems
	after := p.timelineCursor(cursor)
	if err := p.err(); err != nil {
		return TimelinePage{}, err
	}
	events, err := s.store.Timeline(ctx, m.accountID, after, TimelineLimit+1)
	if err != nil {
		return TimelinePage{}, err
	}
	page := TimelinePage{Events: events}
	if len(events) > TimelineLimit {
		page.Events = events[:TimelineLimit]
		last := page.Events[TimelineLimit-1]
		page.NextCursor = encodeTimelineCursor(TimelineKey{OccurredAt: last.OccurredAt, ApprovalID: last.ApprovalID, ReleaseID: last.ReleaseID})
	}
	return page, nil
}
