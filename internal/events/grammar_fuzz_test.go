package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"testing"
)

// typePattern is platform.md's grammar as operations.md reads it, written
// independently of ParseTypeGrammar so the two can be compared.
var typePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9]*(_[a-z0-9]+)*\.[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// FuzzParseType: the parser agrees with the grammar's pattern, its parts
// rebuild the input, the vocabulary check only narrows, and errors are
// *GrammarError.
func FuzzParseType(f *testing.F) {
	for _, s := range []string{
		"identity.user.created", "identity.member.role_changed", "muse.tokens.consumed", "key-holder.pull_grant.requested",
		"identity.user", "a.b.c.d", "Identity.user.created", "identity.user.on_user_created", "id_entity.user.created",
		"identity.user-x.created", "-a.b.created", "a-.b.created", "a..created", "", ".", "..", "a.b.c", "identity.user.created\n",
		"identity.user.createdé", "1a.b.created",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := ParseTypeGrammar(s)
		if (err == nil) != typePattern.MatchString(s) {
			t.Fatalf("ParseTypeGrammar(%q) err %v, pattern match %v", s, err, typePattern.MatchString(s))
		}
		var ge *GrammarError
		if err != nil {
			if !errors.As(err, &ge) || ge.Type != s || ge.Reason == "" {
				t.Fatalf("ParseTypeGrammar(%q): error %T %v", s, err, err)
			}
		} else if typ.String() != s {
			t.Fatalf("ParseTypeGrammar(%q) = %+v, rebuilds %q", s, typ, typ.String())
		}
		full, ferr := ParseType(s)
		switch {
		case ferr == nil && err != nil:
			t.Fatalf("ParseType accepts %q that the grammar refuses", s)
		case ferr == nil && !slices.Contains(Vocabulary(), full.Action):
			t.Fatalf("ParseType accepts action %q outside the vocabulary", full.Action)
		case ferr != nil && err == nil && slices.Contains(Vocabulary(), typ.Action):
			t.Fatalf("ParseType refuses %q: %v", s, ferr)
		case ferr != nil && !errors.As(ferr, &ge):
			t.Fatalf("ParseType(%q): error %T", s, ferr)
		}
	})
}

// FuzzDecodeEnvelope: any bytes decode to a valid envelope or fail with an
// *EnvelopeError, never a panic; a decoded envelope re-encodes to bytes
// that decode to the same envelope.
func FuzzDecodeEnvelope(f *testing.F) {
	valid := `{"specversion":"1.0","id":"0b6f6d1e-8d3a-4f53-9a43-2f1a6f0f2a11","type":"identity.user.created","source":"identity","subject":"5c8d1f3e-0a2b-4c1d-8e9f-1a2b3c4d5e6f","time":"2026-01-02T03:04:05.123456Z","data":{"user_id":"5c8d1f3e-0a2b-4c1d-8e9f-1a2b3c4d5e6f","email":"a@b.co"}}`
	for _, s := range []string{
		valid,
		`{"specversion":"1.0"}`, `[]`, `null`, `{}`, `{"id":1}`, valid + `{}`, valid + ` `,
		`{"specversion":"1.0","specversion":"1.0"}`,
		`{"specversion":"1.0","id":"x","type":"identity.user.created","source":"identity","subject":"platform","time":"2026-01-02T03:04:05+00:00","data":{}}`,
		`{"specversion":"1.0","id":"0b6f6d1e-8d3a-4f53-9a43-2f1a6f0f2a11","type":"identity.user.created","source":"billing","subject":"platform","time":"2026-01-02T03:04:05Z","data":[]}`,
		`{"traceid":"x"}`, `{"data":{"a":` + "\x00" + `}}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			var ee *EnvelopeError
			if !errors.As(err, &ee) || ee.Reason == "" {
				t.Fatalf("Decode: error %T %v, want *EnvelopeError", err, err)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("Decode accepted an envelope Validate refuses: %v", err)
		}
		again, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		e2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", again, err)
		}
		if e2.ID != e.ID || e2.Type != e.Type || e2.Source != e.Source || e2.Subject != e.Subject || !e2.Time.Equal(e.Time) {
			t.Fatalf("round trip changed the envelope: %+v vs %+v", e, e2)
		}
		var c1, c2 bytes.Buffer
		_ = json.Compact(&c1, e.Data)
		_ = json.Compact(&c2, e2.Data)
		if c1.String() != c2.String() {
			t.Fatalf("round trip changed data: %s vs %s", c1.String(), c2.String())
		}
	})
}
