// Package events holds the platform's event contract (platform.md section 6,
// operations.md section 6): the envelope every event travels in, the type
// grammar and action vocabulary, the subject rules, the catalog of types with
// their publishers, and the check that the catalog, the publishers' manifests
// and the payload schemas agree.
//
// The envelope is the required subset of CloudEvents 1.0 and nothing more:
// transport metadata (trace id, attempt count) travels in NATS headers, never
// in the envelope, so decoding refuses any attribute it does not know.
package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/platformco/platform/internal/ids"
)

// SpecVersion is the only envelope version the platform emits and accepts.
const SpecVersion = "1.0"

// Envelope is one event as it travels between services.
type Envelope struct {
	// SpecVersion is always "1.0".
	SpecVersion string `json:"specversion"`
	// ID is a bare UUID, fixed when the event is recorded and reused on every
	// delivery attempt; consumers deduplicate on it.
	ID string `json:"id"`
	// Type is <service>.<entity>.<action> (see ParseType).
	Type string `json:"type"`
	// Source is the publishing service, the first segment of Type.
	Source string `json:"source"`
	// Subject is the entity the event is about (see the subject rules).
	Subject string `json:"subject"`
	// Time is when the state change happened, in UTC.
	Time time.Time `json:"time"`
	// Data is the payload, always a JSON object.
	Data json.RawMessage `json:"data"`
}

// attributes are the envelope's attribute names, in their wire order.
var attributes = [...]string{"specversion", "id", "type", "source", "subject", "time", "data"}

// EnvelopeError is a decoding or validation failure of an envelope. Attribute
// is empty when the problem is with the document as a whole.
type EnvelopeError struct {
	Attribute string
	Reason    string
}

func (e *EnvelopeError) Error() string {
	if e.Attribute == "" {
		return "envelope: " + e.Reason
	}
	return fmt.Sprintf("envelope: %s: %s", e.Attribute, e.Reason)
}

func envErr(attr, format string, args ...any) error {
	return &EnvelopeError{Attribute: attr, Reason: fmt.Sprintf(format, args...)}
}

// FormatTime renders t the way envelopes carry it: RFC 3339 in UTC ("Z"),
// with as many fractional digits as t has (at most nanoseconds).
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseTime reads an envelope time: RFC 3339 with the UTC designator "Z".
// Offsets, even +00:00, are refused so every publisher spells time one way.
func ParseTime(s string) (time.Time, error) {
	if !strings.HasSuffix(s, "Z") {
		return time.Time{}, fmt.Errorf("must be RFC 3339 in UTC ending in Z, got %q", s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("must be RFC 3339 in UTC ending in Z, got %q", s)
	}
	return t.UTC(), nil
}

// MarshalJSON writes the seven attributes in their canonical order, with
// time in UTC and data compacted. A Data that is not a JSON object is an
// error: the platform never emits any other payload.
func (e Envelope) MarshalJSON() ([]byte, error) {
	if d := bytes.TrimLeft(e.Data, " \t\r\n"); len(d) == 0 || d[0] != '{' {
		return nil, envErr("data", "must be a JSON object")
	}
	// Every outbox row is encoded here on its way to the broker, so the
	// attributes are appended (see appendString) to one buffer sized for
	// the whole encoding (names, quotes and a time take under 128 bytes),
	// rather than each marshalled and formatted on its own.
	b := make([]byte, 0, 128+len(e.ID)+len(e.Type)+len(e.Source)+len(e.Subject)+len(e.Data))
	b = append(b, '{')
	for i, v := range [...]string{e.SpecVersion, e.ID, e.Type, e.Source, e.Subject} {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, attributes[i]...)
		b = append(b, '"', ':')
		b = appendString(b, v)
	}
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	buf := bytes.NewBuffer(b)
	// Compact also validates: a payload that only begins like an object is
	// refused here.
	if err := json.Compact(buf, e.Data); err != nil {
		return nil, envErr("data", "not valid JSON: %v", err)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// appendString appends s as encoding/json writes a string. The attributes
// are nearly always plain ASCII (UUIDs, type names, service names), which
// need no escaping and are copied as they are; anything else is left to
// encoding/json, so the bytes are the same either way.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// UnmarshalJSON decodes strictly (see Decode) without validating the values.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	got, err := decode(b)
	if err != nil {
		return err
	}
	*e = got
	return nil
}

// Decode reads one envelope strictly and validates it: exactly one JSON
// object holding exactly the seven attributes, each once, with no other
// attribute and nothing after the object; then every Validate rule.
// Errors are *EnvelopeError.
func Decode(b []byte) (Envelope, error) {
	e, err := decode(b)
	if err != nil {
		return Envelope{}, err
	}
	// decode took data whole out of the document and saw it open an object,
	// so Validate's check of data, a second pass over its bytes, is skipped.
	if err := e.validateAttributes(); err != nil {
		return Envelope{}, err
	}
	return e, nil
}

// decode reads the seven attributes without validating their values.
//
// Every consumer decodes every message here, so this is one pass over the
// object's top level that slices each attribute's value out of b into an
// array indexed by attribute, rather than a json.Decoder's tokens gathered
// into maps. json.Valid checks the whole of b first, without allocating,
// so on well-formed input the pass may trust the syntax. Input that is not
// JSON is walked the same way, but with a json.Decoder reading each key and
// value, so the error names the attribute whose value breaks off, where a
// streaming read finds the break, and a duplicate or undeclared attribute
// before the break is still named as such.
func decode(b []byte) (Envelope, error) {
	wellFormed := json.Valid(b)
	var raw [len(attributes)][]byte
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		if !wellFormed {
			return Envelope{}, notJSON(b, "")
		}
		return Envelope{}, envErr("", "must be a JSON object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i == len(b) || b[i] != '"' {
				return Envelope{}, notJSON(b, "")
			}
			end, err := valueEnd(b, i, wellFormed)
			if err != nil {
				return Envelope{}, notJSON(b, "")
			}
			a, name := attribute(b[i:end])
			if a < 0 {
				return Envelope{}, envErr(name, "undeclared attribute")
			}
			if raw[a] != nil {
				return Envelope{}, envErr(name, "appears more than once")
			}
			i = skipSpace(b, end)
			if i == len(b) || b[i] != ':' {
				return Envelope{}, notJSON(b, name)
			}
			i = skipSpace(b, i+1)
			if end, err = valueEnd(b, i, wellFormed); err != nil {
				return Envelope{}, notJSON(b, name)
			}
			raw[a] = b[i:end]
			i = skipSpace(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i == len(b) || b[i] != '}' {
				return Envelope{}, notJSON(b, "")
			}
			i++
			break
		}
	}
	if skipSpace(b, i) != len(b) {
		return Envelope{}, envErr("", "unexpected data after the object")
	}
	// Input json.Valid refused can pass the walk: the stream reads each
	// value with a nesting limit of its own, so a data as deep as that
	// limit is still taken, as it always was. Each value then was read
	// whole by a json.Decoder, which is all that follows needs.

	// The string attributes without escapes, nearly always all of them,
	// share one allocation; any other is unquoted by encoding/json.
	const data = len(attributes) - 1
	var plain [data]bool
	size := 0
	for a, name := range attributes {
		v := raw[a]
		switch {
		case v == nil:
			return Envelope{}, envErr(name, "required")
		case a == data:
			if v[0] != '{' {
				return Envelope{}, envErr(name, "must be a JSON object")
			}
		case v[0] != '"':
			return Envelope{}, envErr(name, "must be a string")
		case isPlain(v[1 : len(v)-1]):
			plain[a] = true
			size += len(v) - 2
		}
	}
	var buf strings.Builder
	buf.Grow(size)
	for a := range data {
		if plain[a] {
			buf.Write(raw[a][1 : len(raw[a])-1])
		}
	}
	text := buf.String()
	var strs [data]string
	for a := range data {
		v := raw[a]
		if !plain[a] {
			var s string // declared here, so only this road allocates it
			if err := json.Unmarshal(v, &s); err != nil {
				return Envelope{}, envErr(attributes[a], "must be a string")
			}
			strs[a] = s
			continue
		}
		n := len(v) - 2
		strs[a], text = text[:n], text[n:]
	}
	t, err := ParseTime(strs[5]) // attributes[5], time
	if err != nil {
		return Envelope{}, envErr("time", "%v", err)
	}
	return Envelope{
		SpecVersion: strs[0], ID: strs[1], Type: strs[2], Source: strs[3], Subject: strs[4],
		Time: t, Data: append(json.RawMessage(nil), raw[data]...),
	}, nil
}

// notJSON is the error for b, which is not JSON, broken off in attr's value
// (attr empty: outside any value); the json package says what is wrong.
func notJSON(b []byte, attr string) error {
	var v any
	return envErr(attr, "not JSON: %v", json.Unmarshal(b, &v))
}

// isSpace reports whether c is white space between JSON tokens.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value that begins at b[i]. In
// well-formed input the extent follows from quotes and bracket depth alone;
// otherwise a json.Decoder reads the value, so one that breaks off is an
// error exactly where encoding/json's stream finds it.
func valueEnd(b []byte, i int, wellFormed bool) (int, error) {
	if !wellFormed {
		dec := json.NewDecoder(bytes.NewReader(b[i:]))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, err
		}
		return i + int(dec.InputOffset()), nil
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i), nil
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
	default: // a number, true, false or null
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
			j++
		}
		return j, nil
	}
}

// stringEnd returns the end of the well-formed JSON string that begins at
// b[i]: just past the first quote not escaped by an odd run of backslashes.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		j += bytes.IndexByte(b[j:], '"')
		n := 0
		for b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// isPlain reports whether the inside of a JSON string is the string itself:
// no escapes, and valid UTF-8, which encoding/json would otherwise replace.
func isPlain(s []byte) bool { return bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) }

// attribute returns the index in attributes of the well-formed JSON string
// key, -1 if it names none, and the name it spells. A key without escapes
// is compared as the bytes it is.
func attribute(key []byte) (int, string) {
	if inner := key[1 : len(key)-1]; bytes.IndexByte(inner, '\\') < 0 {
		for a, name := range attributes {
			if string(inner) == name {
				return a, name
			}
		}
	}
	var name string
	_ = json.Unmarshal(key, &name) // a well-formed string always unquotes
	for a, attr := range attributes {
		if attr == name {
			return a, attr
		}
	}
	return -1, name
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// Validate checks every rule the envelope states on its own: specversion
// 1.0; id a bare UUID; type valid by grammar and vocabulary; source equal to
// the type's service segment; subject well formed; time set; data an object.
// Which subject form a type uses is the catalog's business (see
// Contract.Validate). Errors are *EnvelopeError.
func (e Envelope) Validate() error {
	if err := e.validateAttributes(); err != nil {
		return err
	}
	if !isObject(e.Data) {
		return envErr("data", "must be a JSON object")
	}
	return nil
}

// validateAttributes is Validate short of its last check, that data is an
// object.
func (e Envelope) validateAttributes() error {
	if e.SpecVersion != SpecVersion {
		return envErr("specversion", "must be %q, got %q", SpecVersion, e.SpecVersion)
	}
	if !ids.Valid(e.ID) {
		return envErr("id", "must be a bare lower-case UUID, got %q", e.ID)
	}
	t, err := ParseType(e.Type)
	if err != nil {
		return envErr("type", "%v", err)
	}
	if e.Source != t.Service {
		return envErr("source", "must equal the type's service segment %q, got %q", t.Service, e.Source)
	}
	if err := checkSubjectText(e.Subject); err != nil {
		return envErr("subject", "%v", err)
	}
	if e.Time.IsZero() {
		return envErr("time", "required")
	}
	return nil
}

// maxSubject bounds a subject; a third party's id longer than this is not an id.
const maxSubject = 255

func checkSubjectText(s string) error {
	switch {
	case s == "":
		return errors.New("required")
	case len(s) > maxSubject:
		return fmt.Errorf("at most %d bytes", maxSubject)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("must not contain white space or control characters, got %q", s)
		}
	}
	return nil
}
