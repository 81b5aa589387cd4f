package identity

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSlugify(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Acme Widgets", "acme-widgets"},
		{"Ácme Córp!", "acme-corp"},
		{"  --Hello,   World--  ", "hello-world"},
		{"Crème brûlée 2", "creme-brulee-2"},
		{"ﬁnance", "finance"}, // a ligature folds by compatibility
		{"日本", ""},
		{"a_b.c", "a-b-c"},
		{strings.Repeat("abcdefghij ", 10), "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij"},
		{strings.Repeat("x", 80), strings.Repeat("x", 63)},
	}
	for _, tt := range tests {
		if got := Slugify(tt.in, SlugMax); got != tt.want {
			t.Errorf("Slugify(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSlugify: whatever the name, the handle is empty or a valid DNS
// label of our grammar, and deriving again changes nothing.
func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"Acme", "Ácme Córp!", "--", "日本 Co", "a\u0301", strings.Repeat("ab-", 40), "\xff\xfe", "ǅemal", "İstanbul"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s := Slugify(name, SlugMax)
		if s == "" {
			return
		}
		if !ValidSlug(s) {
			t.Fatalf("Slugify(%q) = %q, not a valid slug", name, s)
		}
		if !utf8.ValidString(s) || len(s) > SlugMax {
			t.Fatalf("Slugify(%q) = %q: too long or not ASCII", name, s)
		}
		if again := Slugify(s, SlugMax); again != s {
			t.Fatalf("Slugify is not idempotent: %q → %q → %q", name, s, again)
		}
	})
}
