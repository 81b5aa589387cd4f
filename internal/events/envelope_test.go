package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const goodEnvelope = `{"specversion":"1.0","id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","type":"identity.user.created","source":"identity","subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","time":"2025-03-01T09:30:00.123456Z","data":{"user_id":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","email":"ada@example.com"}}`

func TestDecodeOK(t *testing.T) {
	e, err := Decode([]byte(goodEnvelope))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := time.Date(2025, 3, 1, 9, 30, 0, 123456000, time.UTC)
	if !e.Time.Equal(want) || e.Time.Location() != time.UTC {
		t.Errorf("time: got %v, want %v in UTC", e.Time, want)
	}
	if e.Type != "identity.user.created" || e.Source != "identity" {
		t.Errorf("got type %q source %q", e.Type, e.Source)
	}
	out, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if string(out) != goodEnvelope {
		t.Errorf("round trip:\n got %s\nwant %s", out, goodEnvelope)
	}
}

func TestDecodeRefuses(t *testing.T) {
	replace := func(old, new string) string { return strings.Replace(goodEnvelope, old, new, 1) }
	tests := []struct {
		name, in, attr string
	}{
		{"ExtraAttribute", replace(`"data":`, `"traceparent":"00-x","data":`), "traceparent"},
		{"ExtensionAttribute", replace(`"data":`, `"attempt":"1","data":`), "attempt"},
		{"DuplicateAttribute", replace(`"data":`, `"type":"identity.user.created","data":`), "type"},
		{"MissingSubject", replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012",`, ``), "subject"},
		{"MissingData", replace(`,"data":{"user_id":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","email":"ada@example.com"}`, ``), "data"},
		{"SpecVersion", replace(`"1.0"`, `"0.3"`), "specversion"},
		{"SpecVersionNumber", replace(`"1.0"`, `1.0`), "specversion"},
		{"NullID", replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `null`), "id"},
		{"PrefixedID", replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"evt_0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`), "id"},
		{"UpperCaseID", replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `"0B7E2A4C-6F1D-4C5E-9A8B-1D2E3F405162"`), "id"},
		{"BadType", replace(`"identity.user.created"`, `"identity.user.create"`), "type"},
		{"SourceNotService", replace(`"source":"identity"`, `"source":"billing"`), "source"},
		{"EmptySubject", replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":""`), "subject"},
		{"SubjectWithSpace", replace(`"subject":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"`, `"subject":"a b"`), "subject"},
		{"TimeOffset", replace(`09:30:00.123456Z`, `10:30:00.123456+01:00`), "time"},
		{"TimeZeroOffset", replace(`09:30:00.123456Z`, `09:30:00.123456+00:00`), "time"},
		{"TimeNotRFC3339", replace(`2025-03-01T09:30:00.123456Z`, `2025-03-01 09:30:00Z`), "time"},
		{"DataArray", replace(`"data":{"user_id":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","email":"ada@example.com"}`, `"data":[1]`), "data"},
		{"DataNull", replace(`"data":{"user_id":"3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012","email":"ada@example.com"}`, `"data":null`), "data"},
		{"NotObject", `[` + goodEnvelope + `]`, ""},
		{"TrailingData", goodEnvelope + `{}`, ""},
		{"NotJSON", `nope`, ""},
		{"Truncated", `{"specversion":`, "specversion"},
		{"NameOtherCase", replace(`"type":`, `"Type":`), "Type"},
		{"EscapedDuplicate", replace(`"data":`, `"\u0074ype":"identity.user.created","data":`), "type"},
		{"BrokenValue", replace(`"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"`, `tru`), "id"},
		{"BrokenAfterValue", replace(`"source":"identity"`, `"source":"identity" x`), ""},
		{"UndeclaredBeforeBreak", `{"traceparent":"00-x","id":`, "traceparent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			var ee *EnvelopeError
			if !errors.As(err, &ee) {
				t.Fatalf("got %v, want an *EnvelopeError", err)
			}
			if ee.Attribute != tt.attr {
				t.Errorf("attribute: got %q (%v), want %q", ee.Attribute, err, tt.attr)
			}
		})
	}
}

func TestMarshalRefusesNonObjectData(t *testing.T) {
	e := Envelope{SpecVersion: SpecVersion, ID: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", Type: "identity.user.created",
		Source: "identity", Subject: "x", Time: time.Now(), Data: json.RawMessage(`"text"`)}
	if _, err := json.Marshal(e); err == nil {
		t.Fatal("Marshal accepted a string payload")
	}
}

func TestMarshalWritesUTC(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	e := Envelope{SpecVersion: SpecVersion, ID: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", Type: "identity.account.deleted",
		Source: "identity", Subject: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162",
		Time: time.Date(2025, 3, 1, 10, 30, 0, 0, loc), Data: json.RawMessage(`{ "account_id" : "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162" }`)}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"time":"2025-03-01T09:30:00Z"`) || !strings.Contains(string(b), `"data":{"account_id":`) {
		t.Errorf("got %s", b)
	}
	if _, err := Decode(b); err != nil {
		t.Errorf("Decode of own output: %v", err)
	}
}

func TestParseType(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"identity.user.created", true},
		{"identity.member.role_changed", true},
		{"billing.subscription.past_due", true},
		{"key-holder.credential.revoked", true},
		{"identity.api_key.created", true},
		{"identity.user", false},
		{"identity.user.created.v2", false},
		{"Identity.user.created", false},
		{"identity.User.created", false},
		{"identity.user.UserCreated", false},
		{"identity.user.on_user_created", false},
		{"identity.user.user_create", false},
		{"identity.user.users", false},
		{"identity.user.is_active", false},
		{"identity.user.create", false},
		{"key_holder.credential.revoked", false},
		{"identity.user-account.created", false},
		{"identity.user.role__changed", false},
		{"1identity.user.created", false},
		{"identity..created", false},
		{"identity.user.created-", false},
	}
	for _, tt := range tests {
		_, err := ParseType(tt.in)
		if got := err == nil; got != tt.ok {
			t.Errorf("ParseType(%q): got err %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

func TestSubjectKinds(t *testing.T) {
	tests := []struct {
		kind    SubjectKind
		subject string
		ok      bool
	}{
		{SubjectUUID, "3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012", true},
		{SubjectUUID, "usr_3f6c1a9e", false},
		{SubjectUUID, "platform", false},
		{SubjectPlatform, "platform", true},
		{SubjectPlatform, "3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012", false},
		{SubjectExternalID, "sub_1NqA2bC3dE4fG5", true},
		{SubjectExternalID, "", false},
		{SubjectExternalID, "two words", false},
	}
	for _, tt := range tests {
		err := tt.kind.Check(tt.subject)
		if got := err == nil; got != tt.ok {
			t.Errorf("%s.Check(%q): got %v, want ok=%v", tt.kind, tt.subject, err, tt.ok)
		}
	}
}

// TestMarshalBytes pins the wire bytes: attributes in their order, time in
// UTC, strings escaped as encoding/json escapes them (HTML characters,
// controls, U+2028, invalid UTF-8), data compacted but not re-escaped.
func TestMarshalBytes(t *testing.T) {
	at := time.Date(2026, 11, 24, 6, 30, 1, 123456000, time.FixedZone("X", -7200))
	envelope := func(subject string) Envelope {
		return Envelope{SpecVersion: SpecVersion, ID: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", Type: "identity.user.created",
			Source: "identity", Subject: subject, Time: at, Data: json.RawMessage(" {\"email\" : \"a<b>@c.co\",\n \"n\": [1, 2]} ")}
	}
	got, err := envelope("platform").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"specversion":"1.0","id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","type":"identity.user.created",` +
		`"source":"identity","subject":"platform","time":"2026-11-24T08:30:01.123456Z","data":{"email":"a<b>@c.co","n":[1,2]}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for subject, encoded := range map[string]string{
		`quote"back\slash`:   `"quote\"back\\slash"`,
		"<script>&amp;":      `"\u003cscript\u003e\u0026amp;"`,
		"café":               `"café"`,
		"line\u2028sep":      `"line\u2028sep"`,
		"tab\tnew\nline\x01": `"tab\tnew\nline\u0001"`,
		"\xffbad":            `"\ufffdbad"`,
	} {
		got, err := envelope(subject).MarshalJSON()
		if err != nil {
			t.Fatalf("subject %q: %v", subject, err)
		}
		if !bytes.Contains(got, []byte(`,"subject":`+encoded+`,"time":`)) {
			t.Errorf("subject %q: got %s, want it encoded as %s", subject, got, encoded)
		}
	}
}

func TestMarshalRefusesInvalidData(t *testing.T) {
	for _, data := range []string{``, `  `, `[1]`, `{"a":`, `{"a":1} {}`, `{"a":1}x`} {
		e := Envelope{SpecVersion: SpecVersion, ID: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", Type: "identity.user.created",
			Source: "identity", Subject: "x", Time: time.Now(), Data: json.RawMessage(data)}
		var ee *EnvelopeError
		if _, err := e.MarshalJSON(); !errors.As(err, &ee) || ee.Attribute != "data" {
			t.Errorf("data %q: got %v, want an error on data", data, err)
		}
	}
}

// BenchmarkMarshalJSON is the envelope encoding every outbox row goes
// through on its way to the broker.
func BenchmarkMarshalJSON(b *testing.B) {
	e := Envelope{SpecVersion: SpecVersion, ID: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", Type: "identity.user.created",
		Source: "identity", Subject: "5c8d1f3e-0a2b-4c1d-8e9f-1a2b3c4d5e6f", Time: time.Now(),
		Data: json.RawMessage(`{"email": "user1@bench.example.com", "user_id": "5c8d1f3e-0a2b-4c1d-8e9f-1a2b3c4d5e6f"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Validate(); err != nil {
			b.Fatal(err)
		}
		if _, err := e.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
