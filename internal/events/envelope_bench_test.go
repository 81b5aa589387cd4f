package events

import "testing"

// benchEnvelope is an envelope as a consumer receives it from the broker:
// MarshalJSON's compact encoding, about 400 bytes, a payload of three fields.
const benchEnvelope = `{"specversion":"1.0","id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","type":"identity.member.joined",` +
	`"source":"identity","subject":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","time":"2026-11-24T08:30:01.123456Z",` +
	`"data":{"account_id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","user_id":"7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",` +
	`"invitation_id":"c4d5e6f7-a8b9-4c0d-9e1f-2a3b4c5d6e7f"}}`

// BenchmarkDecode is the decoding every consumer does for every message.
func BenchmarkDecode(b *testing.B) {
	in := []byte(benchEnvelope)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
