// Package box is the entitlement service's domain: entitlements and their
// audit trail, capability tokens, releases, approvals and claims, the rules
// that validate them, the error codes it answers with, and the two ports it
// depends on (Store for persistence, Identity for the staff and membership
// checks). It holds no SQL and no HTTP; sqlstore and httpapi adapt it.
package box

import (
	"context"
	"time"

	"github.com/platformco/platform/internal/products"
	"github.com/platformco/platform/internal/semver"
)

// Error codes box answers with. httpapi maps each to one HTTP status.
const (
	CodeUnauthenticated     = "unauthenticated"      // 401
	CodeForbidden           = "forbidden"            // 403
	CodeInsufficientScope   = "insufficient_scope"   // 403: an API key outside its scopes
	CodeNotFound            = "not_found"            // 404
	CodeConflict            = "conflict"             // 409
	CodeUnprocessable       = "unprocessable"        // 422
	CodeUnavailable         = "unavailable"          // 503
	CodeEntitlementRequired = "entitlement_required" // 403
	CodeVersionNotGranted   = "version_not_granted"  // 403
	CodeCapabilityUsed      = "capability_used"      // 410
	CodeCapabilityExpired   = "capability_expired"   // 410
	// CodeInstallationLimit: activating one more installation than the
	// grant's max_installations allows.
	CodeInstallationLimit = "installation_limit" // 409
	// CodeInstallationEnded: a heartbeat or licence for an installation
	// that was deactivated or revoked.
	CodeInstallationEnded = "installation_ended" // 410
)

// Messages of the fixed denials (entitlements.md section 7).
const (
	MsgUnauthenticated = "valid bearer token required"
	MsgForbidden       = "platform staff only"
	MsgNotFound        = "not found"
	MsgUnavailable     = "authorization service unavailable"
)

// Products, as the shared list names them (keyholder reads the same
// list). kit is the free product a claim grants; the other three are sold.
const (
	ProductKit      = products.Kit
	ProductPlatform = products.Platform
	ProductIdentity = products.Identity
	ProductCourier  = products.Courier
)

// Products lists every product in the order messages name them.
var Products = products.All()

// IsProduct reports whether p is one of the four products.
func IsProduct(p string) bool { return products.Valid(p) }

// Entitlement statuses. There is no other state: nothing expires a grant.
const (
	StatusActive  = "active"
	StatusRevoked = "revoked"
)

// Sources box itself writes.
const (
	SourceClaim             = "claim"
	SourceReconciledPayment = "reconciled_payment"
)

// Entitlement is one account's right to one product, optionally limited to
// a version range (nil means every version).
type Entitlement struct {
	ID           int64
	AccountID    string
	Product      string
	Status       string
	VersionRange *string
	Source       *string
	Reference    *string
	GrantedBy    string
	RevokedBy    *string
	GrantedAt    time.Time
	RevokedAt    *time.Time
	// MaxInstallations caps the entitlement's counting installations; nil
	// is unlimited.
	MaxInstallations *int
}

// Range returns the entitlement's version range; a null range is Any. Only
// validated ranges are stored, so an error means a damaged row.
func (e Entitlement) Range() (semver.Range, error) {
	if e.VersionRange == nil {
		return semver.Any(), nil
	}
	return semver.ParseRange(*e.VersionRange)
}

// NewEntitlement is a validated grant, ready to store.
type NewEntitlement struct {
	AccountID    string
	Product      string
	VersionRange *string
	Source       *string
	Reference    *string
	GrantedBy    string
	// MaxInstallations is nil for unlimited.
	MaxInstallations *int
}

// EntitlementFilter selects rows of the operator list. Empty strings do not
// filter; Before, when positive, continues after the row with that id.
type EntitlementFilter struct {
	AccountID string
	Product   string
	Status    string
	Before    int64
	Limit     int
}

// Capability is a single-use token bound to (account, artifact, range). The
// token itself exists only in the response that issues it.
type Capability struct {
	Token        string
	AccountID    string
	Artifact     string
	VersionRange *string
	ExpiresAt    time.Time
}

// NewCapability is a capability to store: of its token, only the selector
// and the digest are kept.
type NewCapability struct {
	Selector     string
	Digest       string
	AccountID    string
	Artifact     string
	VersionRange *string
	TTL          time.Duration
}

// Redemption is what a redeemed capability grants.
type Redemption struct {
	AccountID    string
	Artifact     string
	VersionRange *string
}

// Release is one published version of a product.
type Release struct {
	ID          int64
	Product     string
	Version     string
	Notes       *string
	PublishedBy string
	PublishedAt time.Time
}

// NewRelease is a validated release, ready to store.
type NewRelease struct {
	Product     string
	Version     string
	Notes       *string
	PublishedBy string
}

// ReleaseFilter selects rows of the operator release list.
type ReleaseFilter struct {
	Product string
	Before  int64
	Limit   int
}

// Approval records that a member approved a release for their account.
type Approval struct {
	ID         int64
	AccountID  string
	ReleaseID  int64
	Product    string
	Version    string
	ApprovedBy string
	CreatedAt  time.Time
}

// Claim records that a member claimed the free kit for their account.
type Claim struct {
	ID            int64
	AccountID     string
	Product       string
	ClaimedBy     string
	EntitlementID int64
	CreatedAt     time.Time
}

// Audit timeline item types.
const (
	EventReleasePublished = "release.published"
	EventApprovalCreated  = "approval.created"
)

// AuditEvent is one item of an account's timeline. It is never an
// entitlement event: those are readable only in the database.
type AuditEvent struct {
	ID          string
	Type        string
	OccurredAt  time.Time
	ActorUserID string
	ReleaseID   int64
	ApprovalID  int64 // zero for release.published
	Product     string
	Version     string
}

// EntitlementEvent is one row of the audit trail of grants and revokes,
// which only staff read.
type EntitlementEvent struct {
	ID            int64
	Action        string // "grant" or "revoke"
	EntitlementID int64
	AccountID     string
	Product       string
	ActorUserID   string
	OccurredAt    time.Time
}

// TimelineLimit is a page of the audit timeline.
const TimelineLimit = 100

// TimelineKey is where a page of the timeline ends: the items after it,
// in the timeline's order (newest first, then by approval and release
// id, both descending), are the next page.
type TimelineKey struct {
	OccurredAt time.Time
	ApprovalID int64
	ReleaseID  int64
}

// TimelinePage is one page of an account's timeline. NextCursor asks for
// the older page; it is empty on the last.
type TimelinePage struct {
	Events     []AuditEvent
	NextCursor string
}

// Store is box's persistence. Every method that changes state runs in one
// transaction; the database enforces the invariants (one active
// entitlement per account and product, append-only events, single-use
// capabilities) however calls interleave.
type Store interface {
	// Grant creates an active entitlement and its grant event, or returns
	// the active row that already exists for (account, product) with
	// created false and nothing written.
	Grant(ctx context.Context, e NewEntitlement) (ent Entitlement, created bool, err error)
	// Revoke revokes the entitlement and writes its revoke event; nothing
	// else is touched, yet its outstanding capabilities can no longer be
	// redeemed (RedeemCapability re-checks the entitlement). A revoked row
	// is returned unchanged with no event. Errors: not_found.
	Revoke(ctx context.Context, id int64, actor string) (Entitlement, error)
	// Entitlements lists rows newest first.
	Entitlements(ctx context.Context, f EntitlementFilter) ([]Entitlement, error)
	// ActiveEntitlements lists an account's active rows.
	ActiveEntitlements(ctx context.Context, accountID string) ([]Entitlement, error)
	// IssueCapability reads the account's active entitlement for the
	// artifact (nil when none), asks authorize whether it covers the
	// request, and stores the capability only while that entitlement is
	// still active (reading again when it was revoked meanwhile).
	// Errors: whatever authorize returns.
	IssueCapability(ctx context.Context, c NewCapability, authorize func(*Entitlement) error) (expiresAt time.Time, err error)
	// RedeemCapability consumes the capability stored under selector with
	// the token digest, in one conditional statement: a selector with
	// another digest is not found. Errors: not_found, capability_used,
	// capability_expired.
	RedeemCapability(ctx context.Context, selector, digest string) (Redemption, error)
	// CreateRelease stores a release. Errors: conflict.
	CreateRelease(ctx context.Context, r NewRelease) (Release, error)
	// Releases lists releases newest first.
	Releases(ctx context.Context, f ReleaseFilter) ([]Release, error)
	// ReleasesOf lists every release of the products, newest first.
	ReleasesOf(ctx context.Context, products []string) ([]Release, error)
	// Approve records an approval of a release after authorize accepts the
	// account's active entitlement for the release's product (nil when
	// none), in one transaction. An existing approval of the same release by
	// the account is returned with created false. Errors: unprocessable
	// (unknown release), whatever authorize returns.
	Approve(ctx context.Context, accountID string, releaseID int64, actor string, authorize func(Release, *Entitlement) error) (a Approval, created bool, err error)
	// Claim grants the free kit to the account with its grant event and claim
	// record, or returns the active kit row with a nil claim and nothing
	// written.
	Claim(ctx context.Context, accountID, userID string) (*Claim, Entitlement, error)
	// EntitlementEvents returns the audit trail of grants and revokes of
	// every account, newest first, older than the event before (from the
	// newest when before is 0), at most limit.
	EntitlementEvents(ctx context.Context, before int64, limit int) ([]EntitlementEvent, error)
	// Timeline returns the account's release and approval events, newest
	// first, after the key (from the newest when after is nil), at most
	// limit.
	Timeline(ctx context.Context, accountID string, after *TimelineKey, limit int) ([]AuditEvent, error)

	// Activate records an installation under the account's active
	// entitlement for the product, after authorize accepts that
	// entitlement (nil when none). An active installation with the same
	// fingerprint is seen again instead (last_seen_at, version) and
	// returned with created false. Errors: installation_limit (the
	// database's rule), whatever authorize returns.
	Activate(ctx context.Context, in NewInstallation, authorize func(*Entitlement) error) (inst Installation, created bool, err error)
	// Installation reads one installation. Errors: not_found.
	Installation(ctx context.Context, id string) (Installation, error)
	// Heartbeat records that an active installation was seen now, with its
	// version when not nil. Errors: not_found, installation_ended,
	// installation_limit (a lapsed installation whose place was taken).
	Heartbeat(ctx context.Context, id string, version *string, ttl time.Duration) (Installation, error)
	// Deactivate ends an active installation; an ended one is returned
	// unchanged. Errors: not_found.
	Deactivate(ctx context.Context, id string) (Installation, error)
	// Installations lists installations newest first.
	Installations(ctx context.Context, f InstallationFilter) ([]Installation, error)
}

// Installation statuses as stored; StatusInactive is only ever computed.
const (
	InstallationActive      = "active"
	InstallationInactive    = "inactive"
	InstallationDeactivated = "deactivated"
	InstallationRevoked     = "revoked"
)

// Installation is one running copy of a unit at a customer.
type Installation struct {
	ID            string
	AccountID     string
	EntitlementID int64
	Product       string
	Fingerprint   string
	Name          string
	Version       *string
	// Status is active, deactivated or revoked as stored; StatusAt tells
	// an active one that has lapsed.
	Status     string
	LastSeenAt time.Time
	// LapsesAt is when an active installation stops counting toward the
	// limit unless seen again.
	LapsesAt  time.Time
	CreatedAt time.Time
	EndedAt   *time.Time
}

// StatusAt is the installation's status at now: an active installation
// unseen since LapsesAt is inactive.
func (i Installation) StatusAt(now time.Time) string {
	if i.Status == InstallationActive && !now.Before(i.LapsesAt) {
		return InstallationInactive
	}
	return i.Status
}

// NewInstallation is a validated activation, ready to store.
type NewInstallation struct {
	ID          string
	AccountID   string
	Product     string
	Fingerprint string
	Name        string
	Version     *string
	// TTL is how long the installation counts without a heartbeat.
	TTL time.Duration
}

// InstallationFilter selects installations; an empty AccountID lists
// every account's.
type InstallationFilter struct {
	AccountID string
	Limit     int
}

// Identity answers who a bearer token belongs to (identity's client,
// internal/identity/client, implements it). Every method fails
// closed: any failure to get a well-formed answer is unavailable, and the
// failure class is logged by the implementation, never returned.
type Identity interface {
	// OperatorMe returns the staff user's id. Errors: unauthenticated,
	// forbidden, unavailable.
	OperatorMe(ctx context.Context, token string) (userID string, err error)
	// Publisher returns the staff user on whose authority token may
	// publish a release: a staff session, or a releases:publish key
	// (its creator). Errors: unauthenticated, forbidden, unavailable.
	Publisher(ctx context.Context, token string) (userID string, err error)
	// AccountRole returns the caller's role in the account and, for an
	// API key (role RoleAPIKey), its scopes. Errors: unauthenticated,
	// not_found, unavailable.
	AccountRole(ctx context.Context, token, accountID string) (role string, scopes []string, err error)
	// UserID returns the caller's user id. Errors: unauthenticated,
	// unavailable.
	UserID(ctx context.Context, token string) (userID string, err error)
	// AccountName returns the name of an account the caller belongs to.
	// Errors: unauthenticated, not_found, unavailable.
	AccountName(ctx context.Context, token, accountID string) (string, error)
}
