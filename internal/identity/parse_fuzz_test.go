package identity

import (
	"strings"
	"testing"
	"time"
)

func FuzzParseCodes(f *testing.F) {
	for _, s := range []string{"123456", "123 456", "abcde-fghij", "ABCDE-FGHIJ", "", "12345x", "plat_" + strings.Repeat("A", 43)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c, ok := ParseTOTPCode(s); ok && len(c) != 6 {
			t.Fatalf("ParseTOTPCode(%q) = %q", s, c)
		}
		if d, ok := ParseRecoveryCode(s); ok && len(d) != 64 {
			t.Fatalf("ParseRecoveryCode(%q) digest %q", s, d)
		}
		if ValidAPIKeyToken(s) && (len(s) != apiKeyLen || !strings.HasPrefix(s, APIKeyPrefix)) {
			t.Fatalf("ValidAPIKeyToken(%q) accepted a malformed token", s)
		}
		_, _ = matchTOTP("JBSWY3DPEHPK3PXP", s, time.Unix(0, 0))
	})
}

func TestParseCodes(t *testing.T) {
	tests := []struct {
		in             string
		totp, recovery bool
	}{
		{"123456", true, false},
		{"123 456", true, false},
		{"12345", false, false},
		{"abcde-fghjk", false, true},
		{"ABCDEFGHJK", false, true},
		{"abcde-fghi1", false, false}, // 1 and i are outside the alphabet
	}
	for _, tc := range tests {
		if _, ok := ParseTOTPCode(tc.in); ok != tc.totp {
			t.Errorf("ParseTOTPCode(%q) ok = %v, want %v", tc.in, ok, tc.totp)
		}
		if _, ok := ParseRecoveryCode(tc.in); ok != tc.recovery {
			t.Errorf("ParseRecoveryCode(%q) ok = %v, want %v", tc.in, ok, tc.recovery)
		}
	}
	if ValidAPIKeyToken("plat_" + strings.Repeat("A", 42) + "=") {
		t.Error("a padded token is valid")
	}
}
