package courier

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/seal"
)

// Push statuses (courier.md section 6). queued is the only state a push
// leaves; expired is a subscription the push service no longer knows (404
// or 410), which is deleted with it.
const (
	PushQueued    = "queued"
	PushDelivered = "delivered"
	PushFailed    = "failed"
	PushExpired   = "expired"
)

// PushSubscription is one browser's Web Push subscription of a user. Its
// auth secret is kept sealed and never leaves the store but to the push
// loop.
type PushSubscription struct {
	ID, UserID string
	Endpoint   string
	// P256dh is the browser's public key, base64url without padding.
	P256dh string
	// Device names the browser, from the User-Agent it subscribed with.
	Device               string
	CreatedAt, UpdatedAt time.Time
}

// PushSend is one notification's push to one subscription, with its
// status history.
type PushSend struct {
	ID, EmailID, SubscriptionID, Template, Status string
	Attempts                                      int
	CreatedAt, UpdatedAt                          time.Time
	History                                       []StatusChange
}

// ClaimedPush is a queued push leased to one attempt, with what the
// attempt needs: the subscription's endpoint and keys, and the email's
// template and data (sealed for the email's id).
type ClaimedPush struct {
	ID, EmailID, AttemptID, Template string
	SubscriptionID, Endpoint, P256dh string
	SealedAuth, SealedData           []byte
	Attempts                         int // including this one
}

// PushOutcome is one attempt's result: Status delivered, failed, expired,
// or queued with Next (a retry).
type PushOutcome struct {
	Push   ClaimedPush
	Status string
	Detail string
	Next   *time.Time
}

// PushStore is push's persistence port.
type PushStore interface {
	// SubscribePush records sub for userID (a browser subscribing again
	// replaces its keys; an endpoint is one user's at a time, and pushes
	// still queued for its previous user are failed) and address as the
	// user's, so sends to it reach their subscriptions.
	SubscribePush(ctx context.Context, address string, sub PushSubscription, sealedAuth []byte) (PushSubscription, error)
	PushSubscriptions(ctx context.Context, userID string) ([]PushSubscription, error)
	// DeletePushSubscription answers CodeNotFound for another user's;
	// pushes still queued for it are failed.
	DeletePushSubscription(ctx context.Context, userID, id string) error
	// Pushes returns an email's pushes with their histories.
	Pushes(ctx context.Context, emailID string) ([]PushSend, error)
	// ClaimPushes leases up to limit due queued pushes, each under a new
	// attempt id.
	ClaimPushes(ctx context.Context, limit int, lease time.Duration) ([]ClaimedPush, error)
	// RecordPushes records outcomes in one transaction, each only while
	// its attempt id still holds the push. An expired one deletes its
	// subscription.
	RecordPushes(ctx context.Context, outcomes []PushOutcome) error
}

// Push is the management of users' push subscriptions (courier.md
// section 6).
type Push struct {
	store  PushStore
	sealer *seal.Sealer
	// development admits endpoints on loopback addresses.
	development bool
	// lookup resolves an endpoint's host.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// NewPush returns the subscription management over store. lookup resolves
// endpoint hosts (nil: the system's resolver).
func NewPush(store PushStore, sealer *seal.Sealer, development bool, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) *Push {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return &Push{store: store, sealer: sealer, development: development, lookup: lookup}
}

// SubscriptionInput is a browser's PushSubscription JSON.
type SubscriptionInput struct {
	Endpoint     string
	P256dh, Auth string
	// UserAgent is the subscribing request's, kept as the device's name.
	UserAgent string
}

// pushAuthAAD binds a sealed auth secret to its endpoint.
func pushAuthAAD(endpoint string) string { return "push:" + endpoint }

// decodeKey reads a subscription key: base64url (the browser's form) or
// standard base64, with or without padding.
func decodeKey(s string) ([]byte, bool) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, true
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	return b, err == nil
}

// ValidP256dh reports whether s is an uncompressed point on P-256.
func ValidP256dh(s string) bool {
	b, ok := decodeKey(s)
	if !ok || len(b) != 65 {
		return false
	}
	_, err := ecdh.P256().NewPublicKey(b)
	return err == nil
}

// ValidPushAuth reports whether s is a 16-byte auth secret.
func ValidPushAuth(s string) bool {
	b, ok := decodeKey(s)
	return ok && len(b) == 16
}

// checkPushEndpoint returns "" for an endpoint a subscription may have,
// else the rule it breaks: https only, no credentials, and a host whose
// every address is PublicAddress (loopback too in development). A host
// that resolves to nothing is invalid; a resolver that cannot answer is
// CodeUnavailable.
func (p *Push) checkPushEndpoint(ctx context.Context, raw string) (string, error) {
	if raw == "" {
		return RuleRequired, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || len(raw) > 2048 || hasControl(raw) || u.Fragment != "" {
		return RuleInvalid, nil
	}
	if u.Scheme != "https" {
		return "https_required", nil
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, ip)
	} else {
		found, err := p.lookup(ctx, host)
		var dnsErr *net.DNSError
		switch {
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound, err == nil && len(found) == 0:
			return RuleInvalid, nil
		case err != nil:
			return "", errs.New(CodeUnavailable, "the endpoint's host could not be resolved; try again shortly")
		}
		addrs = found
	}
	for _, ip := range addrs {
		if !PublicAddress(ip) && !(p.development && ip.Unmap().IsLoopback()) {
			return "private_address", nil
		}
	}
	return "", nil
}

// Subscribe records the browser's subscription for u. Errors:
// CodeValidation (an endpoint that is not https or reaches an address
// that is not public, a p256dh that is not a P-256 point, an auth secret
// that is not 16 bytes), CodeUnavailable.
func (p *Push) Subscribe(ctx context.Context, u User, in SubscriptionInput) (PushSubscription, error) {
	var f errs.Fields
	rule, err := p.checkPushEndpoint(ctx, in.Endpoint)
	if err != nil {
		return PushSubscription{}, err
	}
	if rule != "" {
		f.Add("endpoint", rule)
	}
	switch {
	case in.P256dh == "":
		f.Add("keys.p256dh", RuleRequired)
	case !ValidP256dh(in.P256dh):
		f.Add("keys.p256dh", RuleInvalid)
	}
	switch {
	case in.Auth == "":
		f.Add("keys.auth", RuleRequired)
	case !ValidPushAuth(in.Auth):
		f.Add("keys.auth", RuleInvalid)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return PushSubscription{}, err
	}
	pub, _ := decodeKey(in.P256dh)
	auth, _ := decodeKey(in.Auth)
	sub := PushSubscription{ID: uuid.NewString(), UserID: u.ID, Endpoint: in.Endpoint,
		P256dh: base64.RawURLEncoding.EncodeToString(pub), Device: deviceName(in.UserAgent)}
	return p.store.SubscribePush(ctx, NormalizeAddress(u.Email), sub, p.sealer.Seal(pushAuthAAD(in.Endpoint), auth))
}

// deviceName is what a subscription is listed as: the User-Agent, cut to
// 200 characters, without what textrule refuses in one line.
func deviceName(ua string) string {
	ua = strings.ToValidUTF8(strings.TrimSpace(ua), "")
	if hasControl(ua) {
		return ""
	}
	if utf8.RuneCountInString(ua) > 200 {
		ua = string([]rune(ua)[:200])
	}
	return ua
}

// Subscriptions lists u's subscriptions.
func (p *Push) Subscriptions(ctx context.Context, u User) ([]PushSubscription, error) {
	return p.store.PushSubscriptions(ctx, u.ID)
}

// Unsubscribe deletes one of u's subscriptions. Errors: CodeNotFound.
func (p *Push) Unsubscribe(ctx context.Context, u User, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return errs.New(CodeNotFound, "no such push subscription")
	}
	return p.store.DeletePushSubscription(ctx, u.ID, id)
}

// Pushes returns an email's pushes and their status histories.
func (p *Push) Pushes(ctx context.Context, emailID string) ([]PushSend, error) {
	if _, err := uuid.Parse(emailID); err != nil {
		return nil, errs.New(CodeNotFound, "no such email")
	}
	return p.store.Pushes(ctx, emailID)
}

// OpenAuth opens a claimed push's auth secret.
func (p *Push) OpenAuth(c ClaimedPush) ([]byte, error) {
	return p.sealer.Open(pushAuthAAD(c.Endpoint), c.SealedAuth)
}

// PushCategory is the preference that decides whether template is pushed:
// "" for a template never pushed (every security message).
func PushCategory(template string) string {
	spec := templateSpecs[template]
	if spec.security {
		return ""
	}
	return spec.category
}
