package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeMatchesReference: decode agrees with decodeReference, the json.Decoder
// implementation it replaced: the same Envelope, or errors naming the same
// attribute. Decode adds only Validate, the same for both.
func FuzzDecodeMatchesReference(f *testing.F) {
	for _, in := range decodeSeeds() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		compareDecode(t, b)
	})
}

// TestDecodeDeepData: a data nested as deep as encoding/json allows one
// value is taken, as the stream always took it, though json.Valid refuses
// the envelope around it for one level too many; one level more is refused
// and blamed on data.
func TestDecodeDeepData(t *testing.T) {
	const maxDepth = 10000 // encoding/json's nesting limit
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		data := strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
		in := strings.Replace(goodEnvelope, `{"user_id":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","email":"ada@example.com"}`, data, 1)
		if json.Valid([]byte(in)) {
			t.Fatalf("depth %d: json.Valid accepts the envelope; the case tests nothing", depth)
		}
		e, err := decode([]byte(in))
		if ok := depth == maxDepth; (err == nil) != ok {
			t.Errorf("depth %d: got %v, want ok=%v", depth, err, ok)
		}
		if err == nil && string(e.Data) != data {
			t.Errorf("depth %d: data is not the input's", depth)
		}
		compareDecode(t, []byte(in))
	}
}

// TestDecodeAgreesOnSeeds runs the fuzz seeds through the comparison as a
// plain test, so they are checked on every run without -fuzz.
func TestDecodeAgreesOnSeeds(t *testing.T) {
	for _, in := range decodeSeeds() {
		compareDecode(t, []byte(in))
	}
}

// compareDecode fails t unless decode and Decode agree with the reference
// on b. decode reads a copy that is then wiped, so an envelope still
// holding the caller's memory shows as a difference.
func compareDecode(t *testing.T, b []byte) {
	t.Helper()
	in := bytes.Clone(b)
	got, err := decode(in)
	clear(in)
	want, wantErr := decodeReference(b)
	sameOutcome(t, "decode", b, got, err, want, wantErr)
	if err != nil {
		return
	}
	got, err = Decode(b)
	if wantErr = want.Validate(); wantErr != nil {
		want = Envelope{}
	}
	sameOutcome(t, "Decode", b, got, err, want, wantErr)
}

func sameOutcome(t *testing.T, fn string, b []byte, got Envelope, err error, want Envelope, wantErr error) {
	t.Helper()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s(%q): got %v, reference %v", fn, b, err, wantErr)
	}
	if err != nil {
		var ge, we *EnvelopeError
		if !errors.As(err, &ge) || !errors.As(wantErr, &we) {
			t.Fatalf("%s(%q): errors %T %v and %T %v, want *EnvelopeError", fn, b, err, err, wantErr, wantErr)
		}
		if ge.Attribute != we.Attribute {
			t.Fatalf("%s(%q): got %v, reference %v", fn, b, err, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s(%q):\n got %#v\nwant %#v", fn, b, got, want)
	}
}

// decodeSeeds are TestDecodeRefuses' inputs and well-formed envelopes that
// take decode's other roads: escapes in keys and values, invalid UTF-8,
// nested and odd data, white space everywhere, and documents broken off in
// and between attributes.
func decodeSeeds() []string {
	replace := func(old, new string) string { return strings.Replace(goodEnvelope, old, new, 1) }
	const data = `{"user_id":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","email":"ada@example.com"}`
	seeds := []string{
		goodEnvelope,
		benchEnvelope,
		replace(`"data":`, `"traceparent":"00-x","data":`),
		replace(`"data":`, `"attempt":"1","data":`),
		replace(`"data":`, `"type":"identity.user.created","data":`),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012",`, ``),
		replace(`,"data":`+data, ``),
		replace(`"1.0"`, `"0.3"`),
		replace(`"1.0"`, `1.0`),
		replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `null`),
		replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"evt_0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`),
		replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"0B7E2A4C-6F1D-4C5E-9A8B-1D2E3F405162"`),
		replace(`"identity.user.created"`, `"identity.user.create"`),
		replace(`"source":"identity"`, `"source":"billing"`),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":""`),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":"a b"`),
		replace(`09:30:00.123456Z`, `10:30:00.123456+01:00`),
		replace(`09:30:00.123456Z`, `09:30:00.123456+00:00`),
		replace(`2025-03-01T09:30:00.123456Z`, `2025-03-01 09:30:00Z`),
		replace(`"data":`+data, `"data":[1]`),
		replace(`"data":`+data, `"data":null`),
		`[` + goodEnvelope + `]`,
		goodEnvelope + `{}`,
		`nope`,
		`{"specversion":`,

		// Names: escaped, differently cased, escaped into a duplicate, invalid UTF-8.
		replace(`"type":`, `"\u0074ype":`),
		replace(`"type":`, `"Type":`),
		replace(`"data":`, `"\u0074ype":"x","data":`),
		replace(`"data":`, `"typ\u00e9":"x","data":`),
		replace(`"data":`, `"id\xff":"x","data":`),
		replace(`"data":`, `"":"x","data":`),
		// Values: escapes, unicode, invalid UTF-8, surrogates, other types.
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":"caf\u00e9\/\"q\"\\"`),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":"café_☃_𝄞"`),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, "\"subject\":\"bad\xff\xfeutf8\""),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":"\ud834\udd1e\ud800x"`),
		replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":"ends\\"`),
		replace(`"source":"identity"`, `"source":"\u0069dentity"`),
		replace(`"time":"2025-03-01T09:30:00.123456Z"`, `"time":"2025-03-01T09:30:00\u002e123456Z"`),
		replace(`"id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"id":true`),
		replace(`"id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"id":{"a":"b"}`),
		replace(`"id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"id":-1.5e+3`),
		// Data: nested, escaped, empty, with brackets and quotes inside strings.
		replace(`"data":`+data, `"data":{}`),
		replace(`"data":`+data, `"data":{"a":{"b":[1,{"c":"}]\"{["},[[]],null,true,-0.5e10]},"d\"}":"\\"}`),
		replace(`"data":`+data, `"data":"{}"`),
		replace(`"data":`+data, `"data":7`),
		// White space everywhere, and a document of nothing else.
		" \t\r\n{ \"specversion\" :\t\"1.0\" ,\n\"id\"\r:\"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162\" , \"type\" : \"identity.user.created\" ," +
			" \"source\" : \"identity\" , \"subject\" : \"x\" , \"time\" : \"2025-03-01T09:30:00Z\" , \"data\" : { \"a\" : [ 1 , 2 ] } } \n",
		``, ` `, `{}`, ` { } `, `[]`, `"text"`, `12`, `null`, `{"specversion":"1.0"}`,
		// Broken off: in a key, before and after a colon, in and after a
		// value of each kind, between attributes, at the end.
		`{"spec`, `{"specversion"`, `{"specversion" `, `{"specversion" "1.0"}`, `{"specversion": `,
		`{"specversion":"1.`, `{"specversion":"1.0"`, `{"specversion":"1.0",`, `{"specversion":"1.0",}`,
		`{"specversion":"1.0" "id":"x"}`, `{"specversion":"a\x01b"}`, `{"specversion":"a\qb"}`, `{"specversion":"\u12"}`,
		`{"id":12x}`, `{"id":1.x}`, `{"id":-}`, `{"id":01}`, `{"id":1e}`, `{"id":tru}`, `{"id":truex}`, `{"id":nul`, `{"id":12`,
		`{"data":{"a":1}x}`, `{"data":{"a":1x}`, `{"data":{"a":]}`, `{"data":[1}`, `{"data":{`, `{"id":"x"]`,
		`{"traceparent":1, x`, `{"id":"a","id":x`, `{"id":"a","x":`, `{1:2}`, `{,}`, `{"id"::"x"}`,
		goodEnvelope + ` x`, goodEnvelope + `}`, goodEnvelope[:len(goodEnvelope)-1],
	}
	return seeds
}

// decodeReference is decode as it was before it was rewritten for speed: a
// json.Decoder walk into maps. It is the specification decode is fuzzed
// against.
func decodeReference(b []byte) (Envelope, error) {
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
		if !isAttributeReference(name) {
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

func isAttributeReference(name string) bool {
	for _, a := range attributes {
		if a == name {
			return true
		}
	}
	return false
}
