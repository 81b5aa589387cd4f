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
	"github.com/platformco/platform/internal/ids"
	"io"
	"strings"
	"time"
	"unicode"
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
	if err := e.Validate(); err != nil {
		return Envelope{}, err
	}
	return e, nil
}

func decode(b []byte) (Envelope, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return Envelope{}, envErr("", "not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Envelope{}, envErr("", "must be a JSON object")
	}
	raw := make(map[string]json.RawMessage, len(attributes))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Envelope{}, envErr("", "not JSON: %v", err)
		}
		name := tok.(string) // object keys are always strings
		if !isAttribute(name) {
			return Envelope{}, envErr(name, "undeclared attribute")
		}
		if _, dup := raw[name]; dup {
			return Envelope{}, envErr(name, "appears more than once")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Envelope{}, envErr(name, "not JSON: %v", err)
		}
		raw[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Envelope{}, envErr("", "not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Envelope{}, envErr("", "unexpected data after the object")
	}

	var e Envelope
	strs := map[string]*string{
		"specversion": &e.SpecVersion, "id": &e.ID, "type": &e.Type,
		"source": &e.Source, "subject": &e.Subject,
	}
	var timeText string
	strs["time"] = &timeText
	for _, name := range attributes {
		v, ok := raw[name]
		if !ok {
			return Envelope{}, envErr(name, "required")
		}
		if name == "data" {
			if !isObject(v) {
				return Envelope{}, envErr("data", "must be a JSON object")
			}
			e.Data = v
			continue
		}
		if len(v) == 0 || v[0] != '"' {
			return Envelope{}, envErr(name, "must be a string")
		}
		if err := json.Unmarshal(v, strs[name]); err != nil {
			return Envelope{}, envErr(name, "must be a string")
		}
	}
	t, err := ParseTime(timeText)
	if err != nil {
		return Envelope{}, envErr("time", "%v", err)
	}
	e.Time = t
	return e, nil
}

func isAttribute(name string) bool {
	for _, a := range attributes {
		if a == name {
			return true
		}
	}
	return false
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
	if !isObject(e.Data) {
		return envErr("data", "must be a JSON object")
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
