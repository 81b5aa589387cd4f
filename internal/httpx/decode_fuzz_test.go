package httpx

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeJSON: any body decodes or is refused with a 400, 413 or 415;
// never a panic, never another status.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"email":"a@b.co","password":"x"}`, `{"email":1}`, `[]`, `null`, `{}{}`, `{"a":{"b":[1,2,{"c":null}]}}`, "\x00", `{"email":"\ud800"}`, `"str"`} {
		f.Add(s, "application/json")
	}
	f.Add(`{}`, "text/plain")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		var dst struct {
			Email    string         `json:"email"`
			Password string         `json:"password"`
			Extra    map[string]any `json:"extra"`
		}
		err := DecodeJSON(httptest.NewRecorder(), r, &dst)
		if err == nil {
			return
		}
		de, ok := err.(*DecodeError)
		if !ok {
			t.Fatalf("error %T %v, want *DecodeError", err, err)
		}
		switch de.Status {
		case 400, 413, 415:
		default:
			t.Fatalf("status %d", de.Status)
		}
		if de.Message == "" || de.Code == "" {
			t.Fatalf("empty code or message: %+v", de)
		}
	})
}
