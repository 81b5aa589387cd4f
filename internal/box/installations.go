package box

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/semver"
	"github.com/platformco/platform/license"
)

// Defaults of licensing.md §2 and §3.
const (
	DefaultInstallationTTL = 168 * time.Hour
	DefaultLicenseTTL      = 720 * time.Hour
)

// Limits of an installation's fields.
const (
	MaxFingerprintLen      = 128
	maxInstallationNameLen = 100
	// MaxInstallationsLimit is the highest max_installations a grant takes.
	MaxInstallationsLimit = 1000000
	// maxInstallationList caps a list of installations.
	maxInstallationList = 1000
)

// Licensing configures installations and licence files.
type Licensing struct {
	// InstallationTTL is how long an installation counts toward its
	// grant's limit without a heartbeat (DefaultInstallationTTL when zero).
	InstallationTTL time.Duration
	// LicenseTTL is how long a licence file is valid (DefaultLicenseTTL
	// when zero).
	LicenseTTL time.Duration
	// Issuer is box's public URL, the licences' iss.
	Issuer string
	// Keys sign licences: the first signs, every one is published in the
	// key set, so a key being retired still verifies the licences it
	// signed. None: no licence is issued.
	Keys []ed25519.PrivateKey
	// Now is the licences' clock (time.Now when nil).
	Now func() time.Time
}

// WithLicensing sets how installations and licences behave and returns s.
func (s *Service) WithLicensing(l Licensing) *Service {
	if l.InstallationTTL <= 0 {
		l.InstallationTTL = DefaultInstallationTTL
	}
	if l.LicenseTTL <= 0 {
		l.LicenseTTL = DefaultLicenseTTL
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	s.licensing = l
	return s
}

// LicenseKeys is the public key set of the licence keys, newest first.
func (s *Service) LicenseKeys() license.KeySet {
	ks := license.KeySet{Keys: []license.Key{}}
	for _, k := range s.licensing.Keys {
		pub := k.Public().(ed25519.PublicKey)
		ks.Keys = append(ks.Keys, license.Key{ID: license.KeyID(pub), Public: pub})
	}
	return ks
}

// ActivateInput is the body of an activation; nil means absent.
type ActivateInput struct {
	Product     *string
	Fingerprint *string
	Name        *string
	Version     *string
}

// Activation is an activated installation and its licence file (nil when
// box holds no licence key).
type Activation struct {
	Installation Installation
	License      []byte
	Created      bool
}

// fingerprint validates 1–128 printable ASCII characters, taken as sent.
func (p *problems) fingerprint(field string, s *string) string {
	switch {
	case s == nil || *s == "":
		p.add(field, "required", "is required")
	case len(*s) > MaxFingerprintLen:
		p.add(field, "too_long", "must be at most "+strconv.Itoa(MaxFingerprintLen)+" characters")
	default:
		for i := 0; i < len(*s); i++ {
			if c := (*s)[i]; c < 0x20 || c > 0x7e {
				p.add(field, "printable_ascii", "must be printable ASCII characters only")
				return ""
			}
		}
		return *s
	}
	return ""
}

// version validates an optional X.Y.Z.
func (p *problems) version(field string, s *string) *string {
	if blank(s) {
		return nil
	}
	v, err := semver.ParseVersion(*s)
	if err != nil {
		p.add(field, "semver", "must be a version X.Y.Z")
		return nil
	}
	text := v.String()
	return &text
}

// Activate records an installation of a unit the account holds, or sees
// again the active installation with the same fingerprint (Created
// false), and issues its licence. A version, when given, must be in the
// granted range. Errors: unprocessable, entitlement_required,
// version_not_granted, installation_limit, unavailable (identity, for the
// licence's account name).
func (s *Service) Activate(ctx context.Context, m Member, token string, in ActivateInput) (Activation, error) {
	var p problems
	ni := NewInstallation{
		// A random (v4) id, as for accounts: it is in the customer's URLs
		// and licences, where a creation time has no business.
		ID:          uuid.NewString(),
		AccountID:   m.accountID,
		Product:     p.product("product", in.Product, ""),
		Fingerprint: p.fingerprint("fingerprint", in.Fingerprint),
		TTL:         s.licensing.InstallationTTL,
	}
	if blank(in.Name) {
		p.add("name", "required", "is required")
	} else if name := p.text("name", in.Name, maxInstallationNameLen, false); name != nil {
		ni.Name = *name
	}
	ni.Version = p.version("version", in.Version)
	if err := p.err(); err != nil {
		return Activation{}, err
	}
	var ent Entitlement
	inst, created, err := s.store.Activate(ctx, ni, func(e *Entitlement) error {
		if err := coversVersion(ni.Product, ni.Version, e); err != nil {
			return err
		}
		ent = *e
		return nil
	})
	if err != nil {
		return Activation{}, err
	}
	file, err := s.sign(ctx, m, token, inst, ent)
	if err != nil {
		return Activation{}, err
	}
	return Activation{Installation: inst, License: file, Created: created}, nil
}

// coversVersion is Authorize for an installation: the entitlement must be
// active, and a known version within its range.
func coversVersion(product string, version *string, e *Entitlement) error {
	if version == nil {
		if e == nil || e.Status != StatusActive || e.Product != product {
			return Authorize(product, semver.Any(), nil)
		}
		return nil
	}
	exact, err := semver.ParseRange(*version)
	if err != nil {
		return fmt.Errorf("version %q: %w", *version, err)
	}
	return Authorize(product, exact, e)
}

// InstallationMember finds the installation with id and checks that token
// belongs to a member of its account. An id that names no installation
// and a caller outside its account are answered alike. Errors:
// unauthenticated, not_found, unavailable.
func (s *Service) InstallationMember(ctx context.Context, token, id string) (Member, Installation, error) {
	if token == "" {
		return Member{}, Installation{}, unauthenticated()
	}
	id, ok := ids.Parse(id)
	if !ok {
		return Member{}, Installation{}, notFound()
	}
	inst, err := s.store.Installation(ctx, id)
	if err != nil {
		return Member{}, Installation{}, err
	}
	m, err := s.Member(ctx, token, inst.AccountID)
	if err != nil {
		return Member{}, Installation{}, err
	}
	return m, inst, nil
}

// HeartbeatInput is the body of a heartbeat.
type HeartbeatInput struct {
	Version *string
}

// Heartbeat records that the installation was seen now, with its version
// when given; a lapsed installation counts again, if its grant has room.
// Errors: unprocessable, installation_ended, installation_limit.
func (s *Service) Heartbeat(ctx context.Context, m Member, inst Installation, in HeartbeatInput) (Installation, error) {
	var p problems
	version := p.version("version", in.Version)
	if err := p.err(); err != nil {
		return Installation{}, err
	}
	return s.store.Heartbeat(ctx, inst.ID, version, s.licensing.InstallationTTL)
}

// Deactivate ends the installation; an ended one is answered unchanged.
func (s *Service) Deactivate(ctx context.Context, m Member, inst Installation) (Installation, error) {
	return s.store.Deactivate(ctx, inst.ID)
}

// License records a heartbeat and issues a fresh licence file for the
// installation. Errors: installation_ended, installation_limit,
// unavailable (no licence key, or identity for the account name).
func (s *Service) License(ctx context.Context, m Member, token string, inst Installation) ([]byte, error) {
	if len(s.licensing.Keys) == 0 {
		return nil, errs.New(CodeUnavailable, "box holds no licence key (BOX_LICENSE_KEY)")
	}
	inst, err := s.store.Heartbeat(ctx, inst.ID, nil, s.licensing.InstallationTTL)
	if err != nil {
		return nil, err
	}
	ents, err := s.store.ActiveEntitlements(ctx, inst.AccountID)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if e.ID == inst.EntitlementID {
			return s.sign(ctx, m, token, inst, e)
		}
	}
	// Revoking ends the installations in the same transaction: an active
	// installation under an inactive entitlement is a damaged row.
	return nil, fmt.Errorf("installation %s is active under entitlement %d, which is not", inst.ID, inst.EntitlementID)
}

// sign issues the licence of an installation under ent, or nil when box
// holds no licence key.
func (s *Service) sign(ctx context.Context, m Member, token string, inst Installation, ent Entitlement) ([]byte, error) {
	if len(s.licensing.Keys) == 0 {
		return nil, nil
	}
	name, err := s.identity.AccountName(ctx, token, m.accountID)
	if err != nil {
		return nil, err
	}
	now := s.licensing.Now()
	return license.Sign(license.Claims{
		Issuer: s.licensing.Issuer, Subject: inst.ID, AccountID: inst.AccountID, AccountName: name,
		Product: inst.Product, VersionRange: ent.VersionRange, Fingerprint: inst.Fingerprint,
		EntitlementID: ent.ID, IssuedAt: now.Unix(), ExpiresAt: now.Add(s.licensing.LicenseTTL).Unix(),
	}, s.licensing.Keys[0])
}

// AccountInstallations lists the account's installations, newest first.
func (s *Service) AccountInstallations(ctx context.Context, m Member) ([]Installation, error) {
	return s.store.Installations(ctx, InstallationFilter{AccountID: m.accountID, Limit: maxInstallationList})
}

// InstallationQuery is the operator list's query string.
type InstallationQuery struct {
	AccountID, Limit string
}

// Installations lists installations newest first, of one account when
// AccountID is set. Errors: unprocessable.
func (s *Service) Installations(ctx context.Context, staff Staff, q InstallationQuery) ([]Installation, error) {
	var p problems
	f := InstallationFilter{Limit: p.limit(q.Limit)}
	if q.AccountID != "" {
		f.AccountID = p.accountID("account_id", &q.AccountID)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return s.store.Installations(ctx, f)
}
