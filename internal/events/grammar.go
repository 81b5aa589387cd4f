package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/platformco/platform/internal/ids"
)

// Type is a parsed event type <service>.<entity>.<action>.
type Type struct {
	Service string // kebab-case: the publishing service's name
	Entity  string // snake_case, singular
	Action  string // snake_case, from the vocabulary
}

func (t Type) String() string { return t.Service + "." + t.Entity + "." + t.Action }

// SchemaPath is where the type's payload schema lives under schemas/events:
// the dots of the type become directory separators.
func (t Type) SchemaPath() string {
	return t.Service + "/" + t.Entity + "/" + t.Action + ".schema.json"
}

// ValidExamplePath is the example payload the schema must accept.
func (t Type) ValidExamplePath() string {
	return t.Service + "/" + t.Entity + "/" + t.Action + ".valid.json"
}

// InvalidExamplePath is the example payload the schema must refuse.
func (t Type) InvalidExamplePath() string {
	return t.Service + "/" + t.Entity + "/" + t.Action + ".invalid.json"
}

// vocabulary is platform.md's allowed action list. Anything else needs a
// decision by the platform's maintainers, which lands here.
var vocabulary = []string{
	"created", "updated", "deleted", "verified", "enabled", "disabled", "revoked",
	"regenerated", "invited", "joined", "removed", "role_changed", "started",
	"canceled", "past_due", "succeeded", "failed", "refunded", "recorded", "queued",
	"delivered", "bounced", "complained", "suppressed", "requested", "completed",
	"consumed",
	// platform.md catalogues identity.user.email_verified by this name.
	"email_verified",
}

// Vocabulary returns the allowed actions.
func Vocabulary() []string { return slices.Clone(vocabulary) }

// GrammarError is an event type that breaks the grammar or the vocabulary.
type GrammarError struct {
	Type   string
	Reason string
}

func (e *GrammarError) Error() string { return fmt.Sprintf("type %q: %s", e.Type, e.Reason) }

// ParseType splits s into its three segments and checks the grammar (three
// dot-separated segments; a kebab-case service; snake_case entity and action)
// and the action vocabulary, which is what keeps commands and forms such as
// user_create, on_user_created or is_active out. Errors are *GrammarError.
//
// That the entity is singular is a review rule, not checked here: English
// plurals cannot be told by pattern (platform.md's own catalog carries
// muse.tokens.consumed).
func ParseType(s string) (Type, error) {
	t, err := ParseTypeGrammar(s)
	if err != nil {
		return Type{}, err
	}
	if !slices.Contains(vocabulary, t.Action) {
		return Type{}, &GrammarError{s, fmt.Sprintf("action %q is not in the platform's vocabulary (past tense or a state: %s)", t.Action, strings.Join(vocabulary, ", "))}
	}
	return t, nil
}

// ParseTypeGrammar checks the grammar only, not the vocabulary: the check
// applied to catalog rows this repository does not emit, which platform.md
// records as they are (identity.user.email_verified uses an action outside
// the vocabulary). Errors are *GrammarError.
func ParseTypeGrammar(s string) (Type, error) {
	if n := strings.Count(s, ".") + 1; n != 3 {
		return Type{}, &GrammarError{s, fmt.Sprintf("must have exactly three dot-separated segments <service>.<entity>.<action>, has %d", n)}
	}
	var t Type
	var rest string
	t.Service, rest, _ = strings.Cut(s, ".")
	t.Entity, t.Action, _ = strings.Cut(rest, ".")
	if !isSegment(t.Service, '-') {
		return Type{}, &GrammarError{s, fmt.Sprintf("service segment %q must be kebab-case: lower-case letters and digits, starting with a letter, words joined by single dashes", t.Service)}
	}
	if !isSegment(t.Entity, '_') {
		return Type{}, &GrammarError{s, fmt.Sprintf("entity segment %q must be snake_case: lower-case letters and digits, starting with a letter, words joined by single underscores", t.Entity)}
	}
	if !isSegment(t.Action, '_') {
		return Type{}, &GrammarError{s, fmt.Sprintf("action segment %q must be snake_case: lower-case letters and digits, starting with a letter, words joined by single underscores", t.Action)}
	}
	return t, nil
}

// isSegment reports whether s is words of lower-case letters and digits,
// the first starting with a letter, joined by single seps: kebab-case with
// '-', snake_case with '_' (operations.md section 6 reads platform.md's
// grammar so). The publisher checks every event it sends, so this is a
// loop rather than a regular expression; FuzzParseType holds it to the
// grammar's pattern.
func isSegment(s string, sep byte) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == sep && s[i-1] != sep && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// SubjectKind is which of platform.md's three subject forms a type uses.
type SubjectKind string

const (
	// SubjectUUID: a bare UUID, the publisher's own row.
	SubjectUUID SubjectKind = "uuid"
	// SubjectExternalID: a third party's own id, where the entity is the
	// third party's record (say, a payment processor's subscription).
	SubjectExternalID SubjectKind = "external_id"
	// SubjectPlatform: the literal "platform", when no single entity applies.
	SubjectPlatform SubjectKind = "platform"
)

// PlatformSubject is the subject of events about no single entity.
const PlatformSubject = "platform"

// Valid reports whether k is one of the three kinds.
func (k SubjectKind) Valid() bool {
	return k == SubjectUUID || k == SubjectExternalID || k == SubjectPlatform
}

// Check reports whether subject has the form k requires.
func (k SubjectKind) Check(subject string) error {
	if err := checkSubjectText(subject); err != nil {
		return err
	}
	switch k {
	case SubjectUUID:
		if !ids.Valid(subject) {
			return fmt.Errorf("must be a bare lower-case UUID, got %q", subject)
		}
	case SubjectPlatform:
		if subject != PlatformSubject {
			return fmt.Errorf("must be the literal %q, got %q", PlatformSubject, subject)
		}
	case SubjectExternalID:
		// A third party's id is opaque; only its text is checked.
	default:
		return fmt.Errorf("unknown subject kind %q", k)
	}
	return nil
}

// Manifest is what one publishing service declares it emits, in code beside
// the code that emits. A type is real when the catalog has a row for it and
// its publisher's manifest declares it; `platform events check` holds the
// two in agreement.
type Manifest struct {
	Service string
	Types   []string
}
