package courier

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/seal"
)

// CodeForbidden is a member who is not an admin of the account (403).
const CodeForbidden = "forbidden"

// AccountEventTypes are the catalogued events whose subject is an account:
// the ones an account's endpoints may subscribe to.
func AccountEventTypes() []string {
	return []string{
		"identity.account.created", "identity.account.updated", "identity.account.deleted",
		"identity.member.invited", "identity.member.joined", "identity.member.removed", "identity.member.role_changed",
		"billing.usage.recorded",
	}
}

// RetrySchedule is the wait before each retry of a failed webhook
// delivery; after the last, the delivery is failed.
var RetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// DisableAfter is how long an endpoint's deliveries may all fail before
// it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Endpoint is an account's subscription of a URL to event types.
type Endpoint struct {
	ID, AccountID, URL string
	EventTypes         []string
	Description        string
	Disabled           bool
	DisabledReason     string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// EndpointPatch changes the fields that are not nil. SealedSecret, when
// set, replaces the secret (rotation).
type EndpointPatch struct {
	URL          *string
	EventTypes   *[]string
	Description  *string
	Disabled     *bool
	SealedSecret []byte
}

// Delivery is one event's delivery to one endpoint, with its attempts.
type Delivery struct {
	Seq                int64
	ID, EndpointID     string
	EventID, EventType string
	Status             string
	// Waiting is a pending delivery behind an earlier pending delivery of
	// its endpoint and subject; it has no next attempt until that one is
	// delivered or finally fails.
	Waiting              bool
	Attempts             int
	NextAttemptAt        *time.Time
	CreatedAt, UpdatedAt time.Time
	Log                  []DeliveryAttempt
}

// DeliveryAttempt is one POST to an endpoint and what came back.
type DeliveryAttempt struct {
	At         time.Time
	StatusCode int // 0 when no answer came
	Latency    time.Duration
	Response   string // the first 1 KiB of the answer's body
	// ErrorCategory is why the attempt failed (one of the Attempt*
	// categories; "" when it succeeded), and Error a message safe to show
	// the account's admins: never the dial error itself, which may name
	// the platform's resolver or tell whether an internal name resolves.
	ErrorCategory string
	Error         string
}

// A failed attempt's categories.
const (
	// AttemptDNS is a host name that did not resolve.
	AttemptDNS = "dns"
	// AttemptRefused is a host that refused the connection.
	AttemptRefused = "refused"
	// AttemptTimeout is no answer (or no connection) in time.
	AttemptTimeout = "timeout"
	// AttemptTLS is a TLS handshake that failed: an untrusted, expired or
	// mismatched certificate, or no TLS at all.
	AttemptTLS = "tls"
	// AttemptBlockedAddress is an address that is not PublicAddress: no
	// connection was made.
	AttemptBlockedAddress = "blocked_address"
	// AttemptHTTPStatus is an answer that was not 2xx (a redirect too).
	AttemptHTTPStatus = "http_status"
	// AttemptConnection is a connection that failed or closed before an
	// answer came, or an answer that was not HTTP.
	AttemptConnection = "connection"
	// AttemptInternal is courier unable to make the request (its secret
	// could not be opened).
	AttemptInternal = "internal"
)

// ClaimedDelivery is a due delivery leased to one attempt.
type ClaimedDelivery struct {
	ID, EndpointID, URL, EventID, AttemptID string
	// Subject is the event's subject: with the endpoint, the queue whose
	// order the delivery keeps.
	Subject            string
	Body, SealedSecret []byte
	Attempts           int // including this one
}

// WebhookStore is the webhooks' persistence port.
type WebhookStore interface {
	CreateEndpoint(ctx context.Context, e Endpoint, sealedSecret []byte) (Endpoint, error)
	Endpoints(ctx context.Context, accountID string) ([]Endpoint, error)
	// Endpoint, UpdateEndpoint and DeleteEndpoint answer CodeNotFound for
	// an endpoint of another account.
	Endpoint(ctx context.Context, accountID, id string) (Endpoint, error)
	UpdateEndpoint(ctx context.Context, accountID, id string, p EndpointPatch) (Endpoint, error)
	DeleteEndpoint(ctx context.Context, accountID, id string) error
	// Deliveries pages an endpoint's deliveries, newest first, after the
	// cursor seq (0 for the first page).
	Deliveries(ctx context.Context, accountID, endpointID string, before int64, limit int) ([]Delivery, error)
	// RetryDelivery makes a delivery due at once.
	RetryDelivery(ctx context.Context, accountID, endpointID, id string) (Delivery, error)

	// ClaimDeliveries leases up to limit due deliveries of enabled
	// endpoints for lease, under one new attempt id for the claimed set,
	// which only RecordAttempts of that attempt id can settle. Deliveries
	// to an endpoint keep the stream's order per subject: one is claimed
	// only when no earlier delivery of its (endpoint, subject) is pending,
	// in flight or waiting for a retry; different subjects and endpoints
	// go concurrently.
	ClaimDeliveries(ctx context.Context, limit int, lease time.Duration) ([]ClaimedDelivery, error)
	// RecordAttempts records attempts' outcomes, in one transaction, each
	// only while its attempt id still holds the delivery: success, or a
	// failure retried at Next (nil: failed for good). It disables an
	// endpoint when its deliveries have all failed for DisableAfter.
	RecordAttempts(ctx context.Context, outcomes []AttemptOutcome) error
}

// AttemptOutcome is one attempt's result, for WebhookStore.RecordAttempts.
type AttemptOutcome struct {
	Delivery ClaimedDelivery
	Attempt  DeliveryAttempt
	OK       bool
	Next     *time.Time
}

// Member is a caller confirmed a member of AccountID with Role, as
// httpapi resolves it with identity. Domain methods take it, never a
// token.
type Member struct {
	AccountID string
	Role      string
}

// ValidAccountID reports whether id can name an account; a malformed id
// is answered not_found before identity is asked.
func ValidAccountID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil
}

// Webhooks is the endpoint management of courier.md section 4.
type Webhooks struct {
	store  WebhookStore
	sealer *seal.Sealer
	// development admits http:// endpoints on loopback addresses.
	development bool
}

// NewWebhooks returns the endpoint management over store.
func NewWebhooks(store WebhookStore, sealer *seal.Sealer, development bool) *Webhooks {
	return &Webhooks{store: store, sealer: sealer, development: development}
}

// admin checks that m is an owner or admin of its account. Errors:
// CodeForbidden.
func admin(m Member) error {
	if m.Role != "owner" && m.Role != "admin" {
		return errs.New(CodeForbidden, "only the account's owners and admins manage its webhook endpoints")
	}
	return nil
}

// NewSecret returns a signing secret: whsec_ + base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// EndpointInput is a create request.
type EndpointInput struct {
	URL         string
	EventTypes  []string
	Description *string
}

func (w *Webhooks) checkURL(f *errs.Fields, raw string) {
	if err := CheckEndpointURL(raw, w.development); err != "" {
		f.Add("url", err)
	}
}

// CheckEndpointURL returns "" for a URL an endpoint may have, else the
// rule it breaks: https only (http to a loopback address only in
// development), no credentials, and no literal address that is not
// PublicAddress outside development. Host names are checked again on the
// address each connection reaches.
func CheckEndpointURL(raw string, development bool) string {
	u, err := url.Parse(raw)
	if raw == "" {
		return RuleRequired
	}
	if err != nil || u.Host == "" || u.User != nil || len(raw) > 2048 || hasControl(raw) || u.Fragment != "" {
		return RuleInvalid
	}
	host := u.Hostname()
	ip, literal := netip.ParseAddr(host)
	loopback := host == "localhost" || (literal == nil && ip.Unmap().IsLoopback())
	switch u.Scheme {
	case "https":
	case "http":
		if !(development && loopback) {
			return "https_required"
		}
	default:
		return "https_required"
	}
	if literal == nil && !development && !PublicAddress(ip) {
		return "private_address"
	}
	if loopback && !development {
		return "private_address"
	}
	return ""
}

// addressGuard holds the ranges of IANA's IPv4 and IPv6 special-purpose
// registries that are not globally reachable (and everything outside
// IPv6's global unicast 2000::/3), as code.dny.dev/ssrf keeps them; ports
// and networks are the client's business.
var addressGuard = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())

// PublicAddress reports whether ip may be reached outside development: a
// globally reachable address. An address that embeds an IPv4 address is
// judged by it where the embedding is a real path to it: IPv4-mapped
// (::ffff:0:0/96) and well-known NAT64 (64:ff9b::/96, which an IPv6-only
// host reaches IPv4 through), so 64:ff9b::a9fe:a9fe is the metadata
// address and refused. The other embeddings are refused whatever they
// carry: local-use NAT64 64:ff9b:1::/48, 6to4 2002::/16, IPv4-compatible
// ::/96 and Teredo 2001::/32 are not globally reachable.
func PublicAddress(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if ssrf.IPv6NAT64Prefix.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip.IsValid() && addressGuard.SafeAddr(ip) == nil
}

func checkTypes(f *errs.Fields, types []string) {
	if len(types) == 0 {
		f.Add("event_types", RuleRequired)
		return
	}
	allowed := AccountEventTypes()
	for _, t := range types {
		if !slices.Contains(allowed, t) {
			f.Add("event_types", RuleUnknown)
			return
		}
	}
}

func checkDescription(f *errs.Fields, d *string) {
	if d != nil && (utf8.RuneCountInString(*d) > 500 || hasControl(*d)) {
		f.Add("description", RuleInvalid)
	}
}

func dedupe(types []string) []string {
	out := slices.Clone(types)
	slices.Sort(out)
	return slices.Compact(out)
}

// Create adds an endpoint and returns it with its secret, shown only now.
func (w *Webhooks) Create(ctx context.Context, m Member, in EndpointInput) (Endpoint, string, error) {
	if err := admin(m); err != nil {
		return Endpoint{}, "", err
	}
	var f errs.Fields
	w.checkURL(&f, in.URL)
	checkTypes(&f, in.EventTypes)
	checkDescription(&f, in.Description)
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return Endpoint{}, "", err
	}
	e := Endpoint{ID: uuid.NewString(), AccountID: m.AccountID, URL: in.URL, EventTypes: dedupe(in.EventTypes)}
	if in.Description != nil {
		e.Description = strings.TrimSpace(*in.Description)
	}
	secret := NewSecret()
	e, err := w.store.CreateEndpoint(ctx, e, w.sealer.Seal(e.ID, []byte(secret)))
	return e, secret, err
}

// List returns the account's endpoints.
func (w *Webhooks) List(ctx context.Context, m Member) ([]Endpoint, error) {
	if err := admin(m); err != nil {
		return nil, err
	}
	return w.store.Endpoints(ctx, m.AccountID)
}

// Get returns one endpoint.
func (w *Webhooks) Get(ctx context.Context, m Member, id string) (Endpoint, error) {
	if err := admin(m); err != nil {
		return Endpoint{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Endpoint{}, errs.New(CodeNotFound, "no such webhook endpoint")
	}
	return w.store.Endpoint(ctx, m.AccountID, id)
}

// Update changes an endpoint's url, types, description or disabled flag.
func (w *Webhooks) Update(ctx context.Context, m Member, id string, p EndpointPatch) (Endpoint, error) {
	if err := admin(m); err != nil {
		return Endpoint{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Endpoint{}, errs.New(CodeNotFound, "no such webhook endpoint")
	}
	var f errs.Fields
	if p.URL != nil {
		w.checkURL(&f, *p.URL)
	}
	if p.EventTypes != nil {
		checkTypes(&f, *p.EventTypes)
		d := dedupe(*p.EventTypes)
		p.EventTypes = &d
	}
	checkDescription(&f, p.Description)
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return Endpoint{}, err
	}
	p.SealedSecret = nil
	return w.store.UpdateEndpoint(ctx, m.AccountID, id, p)
}

// Delete removes an endpoint and its delivery log.
func (w *Webhooks) Delete(ctx context.Context, m Member, id string) error {
	if err := admin(m); err != nil {
		return err
	}
	if _, err := uuid.Parse(id); err != nil {
		return errs.New(CodeNotFound, "no such webhook endpoint")
	}
	return w.store.DeleteEndpoint(ctx, m.AccountID, id)
}

// Rotate replaces an endpoint's secret and returns the new one, once.
func (w *Webhooks) Rotate(ctx context.Context, m Member, id string) (Endpoint, string, error) {
	if err := admin(m); err != nil {
		return Endpoint{}, "", err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Endpoint{}, "", errs.New(CodeNotFound, "no such webhook endpoint")
	}
	secret := NewSecret()
	e, err := w.store.UpdateEndpoint(ctx, m.AccountID, id, EndpointPatch{SealedSecret: w.sealer.Seal(id, []byte(secret))})
	return e, secret, err
}

// Deliveries pages an endpoint's delivery log.
func (w *Webhooks) Deliveries(ctx context.Context, m Member, id string, before int64, limit int) ([]Delivery, error) {
	if _, err := w.Get(ctx, m, id); err != nil {
		return nil, err
	}
	return w.store.Deliveries(ctx, m.AccountID, id, before, limit)
}

// Retry makes a delivery due at once.
func (w *Webhooks) Retry(ctx context.Context, m Member, endpointID, id string) (Delivery, error) {
	if _, err := w.Get(ctx, m, endpointID); err != nil {
		return Delivery{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Delivery{}, errs.New(CodeNotFound, "no such delivery")
	}
	return w.store.RetryDelivery(ctx, m.AccountID, endpointID, id)
}

// OpenSecret opens a claimed delivery's endpoint secret.
func (w *Webhooks) OpenSecret(d ClaimedDelivery) (string, error) {
	b, err := w.sealer.Open(d.EndpointID, d.SealedSecret)
	return string(b), err
}
