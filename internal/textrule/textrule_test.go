package textrule

import (
	"errors"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		multiline bool
		want      string
		err       error
	}{
		{"OK", "Acme Widgets", false, "Acme Widgets", nil},
		{"NormalizedToNFC", "Cafe\u0301", false, "Caf\u00e9", nil},
		{"EmojiKept", "ship it 🚀", false, "ship it 🚀", nil},
		{"ErrInvisibleNUL", "a\x00b", false, "", ErrInvisible},
		{"ErrInvisibleNewline", "a\nb", false, "", ErrInvisible},
		{"MultilineNewlineKept", "a\r\n\tb", true, "a\r\n\tb", nil},
		{"ErrInvisibleC1", "a\u0085b", true, "", ErrInvisible},
		{"ErrInvisibleRightToLeftOverride", "invoice\u202egpj.exe", false, "", ErrInvisible},
		{"ErrInvisibleRightToLeftIsolate", "a\u2067b", false, "", ErrInvisible},
		{"ErrInvisibleRightToLeftMark", "a\u200fb", false, "", ErrInvisible},
		{"ErrInvisibleArabicLetterMark", "a\u061cb", false, "", ErrInvisible},
		{"ErrInvisibleZeroWidthSpace", "ac\u200bme", false, "", ErrInvisible},
		{"ErrInvisibleZeroWidthJoiner", "ac\u200dme", false, "", ErrInvisible},
		{"ErrInvisibleZeroWidthNonJoiner", "ac\u200cme", false, "", ErrInvisible},
		{"ErrInvisibleWordJoiner", "ac\u2060me", false, "", ErrInvisible},
		{"ErrInvisibleByteOrderMark", "\ufeffacme", false, "", ErrInvisible},
		{"ErrInvisibleSoftHyphen", "ac\u00adme", false, "", ErrInvisible},
		{"ErrInvisibleLineSeparator", "a\u2028b", true, "", ErrInvisible},
		{"ErrInvisibleMongolianVowelSeparator", "a\u180eb", false, "", ErrInvisible},
		{"ErrInvalidUTF8", "a\xffb", false, "", ErrInvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Text(tt.in, tt.multiline)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Text(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEmail(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		err  error
	}{
		{"OK", "alice@example.com", "alice@example.com", nil},
		{"OKDecomposedAccentNormalized", "jose\u0301@example.com", "jos\u00e9@example.com", nil},
		{"OKAllCyrillicLocalPart", "иван@example.com", "иван@example.com", nil},
		{"OKCyrillicLabelUnderLatinTLD", "ivan@пример.com", "ivan@пример.com", nil},
		{"OKJapanese", "やまだ太郎@example.jp", "やまだ太郎@example.jp", nil},
		{"OKDigitsAndDots", "a.b+1@x-1.example.com", "a.b+1@x-1.example.com", nil},
		{"ErrMixedScriptsCyrillicA", "\u0430lice@example.com", "", ErrMixedScripts},
		{"ErrMixedScriptsGreekOmicron", "b\u03bfb@example.com", "", ErrMixedScripts},
		{"ErrMixedScriptsDomain", "alice@ex\u0430mple.com", "", ErrMixedScripts},
		{"ErrMixedScriptsCyrillicAndGreek", "\u0430\u03b1@example.com", "", ErrMixedScripts},
		{"ErrInvisibleRightToLeftOverride", "alice\u202e@example.com", "", ErrInvisible},
		{"ErrInvisibleZeroWidthSpace", "al\u200bice@example.com", "", ErrInvisible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Email(tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Email(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Email(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSingleScript(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", true},
		{"123-_", true},
		{"hello", true},
		{"привет", true},
		{"日本語とカタカナ", true},
		{"Latin漢字", true},
		{"한국어漢字abc", true},
		{"hangulかな한", false},
		{"abcпривет", false},
		{"ελληνικάпривет", false},
	}
	for _, tt := range tests {
		if got := SingleScript(tt.in); got != tt.want {
			t.Errorf("SingleScript(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
