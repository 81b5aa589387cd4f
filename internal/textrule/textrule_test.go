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
		{"ErrInvisibleHangulFiller", "a\u3164b", false, "", ErrInvisible},
		{"ErrInvisibleHangulFillerAlone", "\u3164", false, "", ErrInvisible},
		{"ErrInvisibleHalfwidthHangulFiller", "a\uffa0b", false, "", ErrInvisible},
		{"ErrInvisibleHangulChoseongFiller", "a\u115fb", false, "", ErrInvisible},
		{"ErrInvisibleCombiningGraphemeJoiner", "a\u034fb", false, "", ErrInvisible},
		{"ErrInvisibleKhmerInherentVowel", "a\u17b4b", false, "", ErrInvisible},
		{"ErrInvisibleVariationSelectorAfterLetter", "Acme\ufe0f", false, "", ErrInvisible},
		{"ErrInvisibleVariationSelector1", "Ac\ufe00me", false, "", ErrInvisible},
		{"ErrInvisibleVariationSelectorSupplement", "Acme\U000e0100", false, "", ErrInvisible},
		{"ErrInvisibleVariationSelectorFirst", "\ufe0f", false, "", ErrInvisible},
		{"ErrInvisibleMongolianFreeVariationSelector", "a\u180bb", false, "", ErrInvisible},
		{"EmojiPresentationSelectorKept", "ship it \u2764\ufe0f", false, "ship it \u2764\ufe0f", nil},
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
		{"ErrInvisibleHangulFiller", "al\u3164ice@example.com", "", ErrInvisible},
		{"ErrInvisibleVariationSelector", "alice\ufe0f@example.com", "", ErrInvisible},
		{"OKHebrewDomainLabel", "dan@\u05d3\u05d5\u05d2\u05de\u05d4.com", "dan@\u05d3\u05d5\u05d2\u05de\u05d4.com", nil},
		{"ErrCompatibilityFullwidthLocalPart", "\uff41\uff4c\uff49\uff43\uff45@example.com", "", ErrCompatibility},
		{"ErrCompatibilityFullwidthDomain", "alice@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com", "", ErrCompatibility},
		{"ErrCompatibilityFullwidthAt", "alice\uff20example.com", "", ErrCompatibility},
		{"ErrCompatibilityFullwidthFullStop", "alice@example\uff0ecom", "", ErrCompatibility},
		{"ErrCompatibilityHalfwidthKatakana", "\uff94\uff8f\uff80\uff9e@example.jp", "", ErrCompatibility},
		{"ErrDisallowedMathematicalBold", "\U0001d41a\U0001d425\U0001d422\U0001d41c\U0001d41e@example.com", "", ErrDisallowed},
		{"ErrDisallowedSymbol", "ali\u2605ce@example.com", "", ErrDisallowed},
		{"ErrDisallowedNoBreakSpace", "ali\u00a0ce@example.com", "", ErrDisallowed},
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

func TestName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		err  error
	}{
		{"OK", "Acme Widgets", "Acme Widgets", nil},
		{"OKTrimmed", "  Acme  ", "Acme", nil},
		{"OKBlank", "  ", "", nil},
		{"OKSpacesCollapsed", "Acme   Widgets", "Acme Widgets", nil},
		{"OKDiaeresis", "Zo\u00eb", "Zo\u00eb", nil},
		{"OKDecomposedNormalized", "Zoe\u0308", "Zo\u00eb", nil},
		{"OKJapaneseSingleWord", "東京チーム", "東京チーム", nil},
		{"OKHanAndLatin", "東京 Tokyo", "東京 Tokyo", nil},
		{"OKScriptPerWord", "Acme Россия", "Acme Россия", nil},
		{"OKCyrillic", "Акме", "Акме", nil},
		{"OKEmoji", "Acme \U0001f680", "Acme \U0001f680", nil},
		{"OKPunctuation", "O'Brien & Co. (EU)", "O'Brien & Co. (EU)", nil},
		{"ErrMixedScriptsCyrillicA", "\u0410cme", "", ErrMixedScripts},
		{"ErrMixedScriptsGreekOmicron", "Acme B\u03bfx", "", ErrMixedScripts},
		{"ErrMixedScriptsAcrossHyphen", "\u0410-cme", "", ErrMixedScripts},
		{"ErrCompatibilityFullwidth", "\uff21\uff43\uff4d\uff45", "", ErrCompatibility},
		{"ErrCompatibilityFullwidthOneLetter", "Ac\uff4de", "", ErrCompatibility},
		{"ErrCompatibilityIdeographicSpace", "Acme\u3000Widgets", "", ErrCompatibility},
		{"ErrCompatibilityNoBreakSpace", "Acme\u00a0Widgets", "", ErrCompatibility},
		{"ErrCompatibilityMathematicalBold", "\U0001d400\U0001d41c\U0001d426\U0001d41e", "", ErrCompatibility},
		{"ErrCompatibilityHalfwidthKatakana", "\uff83\uff9d\uff8e\uff9f", "", ErrCompatibility},
		{"ErrCompatibilityLigature", "\ufb01nance", "", ErrCompatibility},
		{"ErrInvisibleHangulFiller", "\u3164", "", ErrInvisible},
		{"ErrInvisibleHangulFillerInside", "Ac\u3164me", "", ErrInvisible},
		{"ErrInvisibleVariationSelector", "Acme\ufe0f", "", ErrInvisible},
		{"ErrInvisibleEmojiPresentationSelector", "Acme \u2764\ufe0f", "", ErrInvisible},
		{"ErrInvisibleCombiningGraphemeJoiner", "Ac\u034fme", "", ErrInvisible},
		{"ErrInvisibleTag", "Acme\U000e0041", "", ErrInvisible},
		{"ErrInvisibleZeroWidthJoiner", "Ac\u200dme", "", ErrInvisible},
		{"ErrInvisibleRightToLeftOverride", "Acme\u202e", "", ErrInvisible},
		{"ErrInvisibleReservedIgnorable", "Acme\U000e0fff", "", ErrInvisible},
		{"ErrDisallowedNoncharacter", "Acme\U0002fffe", "", ErrDisallowed},
		{"ErrInvalidUTF8", "Ac\xffme", "", ErrInvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Name(tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Name(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Name(%q) = %q, want %q", tt.in, got, tt.want)
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
