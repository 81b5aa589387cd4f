package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
)

func TestEmailRules(t *testing.T) {
	tests := []struct {
		in   string
		norm string
		rule string // "" when valid
	}{
		{"ada@example.com", "ada@example.com", ""},
		{"  Ada.Lovelace@Example.COM\t", "ada.lovelace@example.com", ""},
		{"a+tag@sub.example.co.uk", "a+tag@sub.example.co.uk", ""},
		{"a_b@x.io", "a_b@x.io", ""},
		{"a%b@x.io", "a%b@x.io", ""},
		{"", "", RuleRequired},
		{"   ", "", RuleRequired},
		{"ada", "ada", RuleInvalid},
		{"ada@", "ada@", RuleInvalid},
		{"@example.com", "@example.com", RuleInvalid},
		{"ada@@example.com", "ada@@example.com", RuleInvalid},
		{"Ada <ada@example.com>", "ada <ada@example.com>", RuleInvalid},
		{"<ada@example.com>", "<ada@example.com>", RuleInvalid},
		{"ada@example.com, bob@example.com", "ada@example.com, bob@example.com", RuleInvalid},
		{"ada lovelace@example.com", "ada lovelace@example.com", RuleInvalid},
		{"a@" + strings.Repeat("d", 250) + ".io", "a@" + strings.Repeat("d", 250) + ".io", RuleInvalid}, // 255 characters
	}
	for _, tt := range tests {
		norm := NormalizeEmail(tt.in)
		if norm != tt.norm {
			t.Errorf("NormalizeEmail(%q) = %q, want %q", tt.in, norm, tt.norm)
		}
		var f errs.Fields
		checkEmail(&f, norm)
		var got string
		if len(f) == 1 && f[0].Field == "email" {
			got = f[0].Code
		} else if len(f) != 0 {
			t.Errorf("checkEmail(%q) = %v", norm, f)
		}
		if got != tt.rule {
			t.Errorf("checkEmail(%q) = %q, want %q", norm, got, tt.rule)
		}
	}
	if a := "a@" + strings.Repeat("d", 249) + ".io"; !validEmail(a) {
		t.Errorf("a %d-character address is refused", len(a))
	}
}

func TestPasswordRules(t *testing.T) {
	tests := []struct {
		pw   string
		rule string
	}{
		{"", RuleTooShort},
		{"1234567", RuleTooShort},
		{"ééééééé", RuleTooShort}, // 14 bytes, 7 characters
		{"12345678", ""},
		{"        ", ""},
		{strings.Repeat("x", 128), ""},
		{strings.Repeat("ж", 128), ""}, // 256 bytes, 128 characters
		{strings.Repeat("x", 129), RuleTooLong},
	}
	for _, tt := range tests {
		var f errs.Fields
		checkPassword(&f, tt.pw)
		got := ""
		if len(f) > 0 {
			got = f[0].Code
		}
		if got != tt.rule {
			t.Errorf("checkPassword(%d bytes) = %q, want %q", len(tt.pw), got, tt.rule)
		}
	}
}

func TestValidSlug(t *testing.T) {
	for _, s := range []string{"a", "acme", "acme-corp", "a1-b2-c3", strings.Repeat("a", 63)} {
		if !ValidSlug(s) {
			t.Errorf("ValidSlug(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-a", "a-", "a--b", "Acme", "a_b", "a b", "é", strings.Repeat("a", 64)} {
		if ValidSlug(s) {
			t.Errorf("ValidSlug(%q) = true", s)
		}
	}
}

func TestSlugifyCut(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"alpha beta gamma", 10, "alpha-beta"},
		{"alpha beta gamma", 11, "alpha-beta"},
		{"alphabetagamma", 5, "alpha"},
		{"ab cdefghijkl", 8, "ab-cdefg"}, // the only dash is too early to cut at
		{"jean.dupont+news", 54, "jean-dupont-news"},
	}
	for _, tt := range tests {
		got := Slugify(tt.in, tt.max)
		if got != tt.want || len(got) > tt.max {
			t.Errorf("Slugify(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestAccountNameRules(t *testing.T) {
	tests := []struct {
		name string
		rule string
	}{
		{"Acme", ""},
		{strings.Repeat("n", 120), ""},
		{strings.Repeat("ñ", 120), ""},
		{"", RuleTooShort},
		{strings.Repeat("n", 121), RuleTooLong},
		{"日本語", RuleInvalid},
		{"Acme\x00", RuleInvalid},
		{"Acme\u2028Corp", RuleInvalid}, // a line separator breaks the line a name is shown on
		{"Acme\u202eCorp", RuleInvalid}, // a bidi override makes the name read as another
		{"Ac\u200bme", RuleInvalid},     // zero-width: looks like "Acme"
		{"Zo\u00eb", ""},
		{"東京チーム Tokyo", ""},
		{"\u3164", RuleInvalid},                   // Hangul filler: a letter that shows as nothing
		{"Acme\ufe0f", RuleInvalid},               // variation selector: invisible after a letter
		{"\u0410cme", RuleInvalid},                // Cyrillic А: looks like "Acme"
		{"\uff21\uff43\uff4d\uff45", RuleInvalid}, // fullwidth: looks like "Acme"
	}
	for _, tt := range tests {
		var f errs.Fields
		_ = checkAccountName(&f, tt.name)
		got := ""
		if len(f) > 0 {
			got = f[0].Code
		}
		if got != tt.rule {
			t.Errorf("checkAccountName(%q) = %q, want %q", tt.name, got, tt.rule)
		}
	}
}

func TestRoleOrder(t *testing.T) {
	roles := []Role{RoleMember, RoleAdmin, RoleOwner}
	for i, r := range roles {
		if !r.Valid() {
			t.Errorf("%s is not valid", r)
		}
		for j, min := range roles {
			if got, want := r.AtLeast(min), i >= j; got != want {
				t.Errorf("%s.AtLeast(%s) = %v, want %v", r, min, got, want)
			}
		}
	}
	for _, r := range []Role{"", "Owner", "root"} {
		if r.Valid() || r.AtLeast(RoleMember) || r.AtLeast("") {
			t.Errorf("role %q is valid or permits something", r)
		}
	}
	if MinRoleRead != RoleMember || MinRoleRename != RoleAdmin || MinRoleInvite != RoleAdmin || MinRoleRemove != RoleAdmin ||
		MinRoleChangeRole != RoleOwner || MinRoleDelete != RoleOwner {
		t.Error("the minimum-role table differs from identity.md section 2")
	}
}

func TestAuthorizeWithoutAccount(t *testing.T) {
	if err := Authorize(Principal{}, RoleMember); !errors.Is(err, ErrAccountNotFound) {
		t.Errorf("Authorize without an account = %v, want ErrAccountNotFound", err)
	}
	p := Principal{Account: &Account{Role: RoleAdmin}}
	if err := Authorize(p, RoleOwner); !errors.Is(err, ErrRoleForbidden) {
		t.Errorf("admin for owner = %v, want ErrRoleForbidden", err)
	}
	if ErrInvitationUnknown.Message != ErrAccountNotFound.Message {
		t.Error("a wrong invitation token must read like an unknown account")
	}
}

var cheap = HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}

func TestHasher(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(cheap, 1)
	enc, err := h.Hash(ctx, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Errorf("hash = %q, want the argon2id PHC form", enc)
	}
	if strings.Contains(enc, "correct horse") {
		t.Error("the hash holds the password")
	}
	again, _ := h.Hash(ctx, "correct horse")
	if again == enc {
		t.Error("two hashes of one password are equal: no salt")
	}
	tests := []struct {
		name            string
		h               *Hasher
		pw, enc         string
		ok, needsRehash bool
		wantErr         bool
	}{
		{"Right", h, "correct horse", enc, true, false, false},
		{"Wrong", h, "correct horsE", enc, false, false, false},
		{"Empty", h, "", enc, false, false, false},
		{"UnknownAddress", h, "correct horse", "", false, false, false},
		{"UnknownAddressPlaceholder", h, "unknown-address-placeholder", "", false, false, false},
		{"OtherParams", NewHasher(HashParams{MemoryKiB: 128, Passes: 1, Threads: 1}, 1), "correct horse", enc, true, true, false},
		{"OtherParamsWrong", NewHasher(HashParams{MemoryKiB: 128, Passes: 1, Threads: 1}, 1), "wrong", enc, false, false, false},
		{"Malformed", h, "correct horse", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$a2V5", false, false, true},
		{"NotPHC", h, "correct horse", "plaintext", false, false, true},
		{"ZeroPasses", h, "correct horse", "$argon2id$v=19$m=64,t=0,p=1$c2FsdA$a2V5", false, false, true},
	}
	for _, tt := range tests {
		ok, rehash, err := tt.h.Verify(ctx, tt.pw, tt.enc)
		if ok != tt.ok || rehash != tt.needsRehash || (err != nil) != tt.wantErr {
			t.Errorf("%s: Verify = %v, %v, %v; want %v, %v, error %v", tt.name, ok, rehash, err, tt.ok, tt.needsRehash, tt.wantErr)
		}
	}
}

// TestHasherQueues: with every slot taken, a hash waits, and gives up
// when its context ends.
func TestHasherQueues(t *testing.T) {
	h := NewHasher(cheap, 1)
	release, err := h.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, "correct horse"); !errors.Is(err, context.Canceled) {
		t.Errorf("Hash with no free slot and a cancelled context = %v", err)
	}
	if _, _, err := h.Verify(ctx, "x", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with no free slot and a cancelled context = %v", err)
	}
	release()
	if _, err := h.Hash(context.Background(), "correct horse"); err != nil {
		t.Errorf("Hash after release: %v", err)
	}
}

func TestLockedError(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		until time.Time
		want  time.Duration
	}{
		{now.Add(15 * time.Minute), 15 * time.Minute},
		{now.Add(1500 * time.Millisecond), 1500 * time.Millisecond},
		{now.Add(time.Millisecond), time.Second},
		{now, time.Second},
	} {
		e, ok := errs.As(LockedError(tt.until, now))
		if !ok || e.Code != CodeLocked || e.RetryAfter != tt.want {
			t.Errorf("LockedError(%v) = %+v, want RetryAfter %v", tt.until.Sub(now), e, tt.want)
		}
	}
}

func TestTokens(t *testing.T) {
	tok, digest := newToken()
	sum := sha256.Sum256([]byte(tok))
	if digest != hex.EncodeToString(sum[:]) || TokenDigest(tok) != digest {
		t.Errorf("digest of %q = %q, want its SHA-256", tok, digest)
	}
	if len(tok) != 43 {
		t.Errorf("token %q: want 32 random bytes, base64url", tok)
	}
	if other, _ := newToken(); other == tok {
		t.Error("two tokens are equal")
	}
	if s := randomSuffix(8); len(s) != 8 || !ValidSlug(s) {
		t.Errorf("randomSuffix = %q", s)
	}
}

func TestEventTypes(t *testing.T) {
	want := []string{
		"identity.user.created", "identity.account.created", "identity.account.updated", "identity.account.deleted",
		"identity.member.invited", "identity.member.joined", "identity.member.removed", "identity.member.role_changed",
		"identity.staff.enabled", "identity.staff.disabled",
		"identity.user.email_verified", "identity.session.revoked",
		"identity.mfa.enabled", "identity.mfa.disabled", "identity.api_key.created", "identity.api_key.revoked",
		"identity.oidc_client.created", "identity.oidc_client.revoked",
	}
	got := EventTypes()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("EventTypes = %v, want %v", got, want)
	}
}
