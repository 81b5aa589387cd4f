package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

func TestReadinessBodies(t *testing.T) {
	down := errors.New("connection refused")
	ok := func(context.Context) error { return nil }
	fail := func(err error) func(context.Context) error { return func(context.Context) error { return err } }
	tests := []struct {
		name      string
		render    Render
		checks    []Check
		wantReady bool
		wantBody  string
	}{
		{"NoDatabase", DepsBody(""), nil, true, `{"deps":"none","status":"ok"}`},
		{"DatabaseOK", DepsBody("postgres"), []Check{{Name: CheckDatabase, Check: ok}}, true, `{"deps":"postgres","status":"ok"}`},
		{"DatabaseDown", DepsBody("postgres"), []Check{{Name: CheckDatabase, Check: fail(down)}}, false, `{"deps":"postgres","status":"unavailable"}`},
		{"MigrationsPending", DepsBody("sqlite"), []Check{{Name: CheckDatabase, Check: fail(ErrMigrationsPending)}}, false,
			`{"deps":"sqlite","migrations":"pending","status":"unavailable"}`},
		{"NamedAllOK", NamedDeps(map[string]string{"engine": "sqlite"}), []Check{{Name: CheckDatabase, Check: ok}, {Name: "box", Check: ok}}, true,
			`{"deps":{"box":"ok","database":"ok"},"engine":"sqlite","status":"ok"}`},
		{"NamedPending", NamedDeps(nil), []Check{{Name: CheckDatabase, Check: fail(ErrMigrationsPending)}, {Name: "box", Check: ok}}, false,
			`{"deps":{"box":"ok","database":"unavailable"},"migrations":"pending","status":"unavailable"}`},
		{"NamedOptionalDown", NamedDeps(nil), []Check{{Name: "key_set", Check: ok}, {Name: "redis", Check: fail(down), Optional: true}}, true,
			`{"deps":{"key_set":"ok","redis":"unavailable"},"status":"degraded"}`},
		{"ChecksError", ChecksBody, []Check{{Name: CheckDatabase, Check: fail(down)}}, false, `{"checks":{"database":"error"},"status":"error"}`},
		{"ChecksOK", ChecksBody, []Check{{Name: CheckDatabase, Check: ok}}, true, `{"checks":{"database":"ok"},"status":"ok"}`},
		{"SlowCheckIsUnavailable", DepsBody("postgres"), []Check{{Name: CheckDatabase, Bound: 50 * time.Millisecond,
			Check: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}}, false, `{"deps":"postgres","status":"unavailable"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReadiness(tt.render, slog.New(slog.DiscardHandler))
			for _, c := range tt.checks {
				r.Add(c)
			}
			rec := httptest.NewRecorder()
			r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			wantStatus := http.StatusOK
			if !tt.wantReady {
				wantStatus = http.StatusServiceUnavailable
			}
			if rec.Code != wantStatus {
				t.Errorf("status %d, want %d", rec.Code, wantStatus)
			}
			var got, want any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tt.wantBody), &want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("body %s, want %s", rec.Body.String(), tt.wantBody)
			}
		})
	}
}

func TestErrorsWrite(t *testing.T) {
	const codeBad = "validation"
	fields := []errs.FieldError{{Field: "email", Code: "invalid"}}
	for _, env := range []struct {
		name     string
		envelope Envelope
	}{{"Problem", Problem}, {"ErrorObject", ErrorObject}} {
		e := Errors{Envelope: env.envelope, Status: map[string]int{codeBad: 422, "unauthorized": 401}, Realm: "svc", Logger: slog.New(slog.DiscardHandler)}
		tests := []struct {
			name       string
			err        error
			cancel     bool
			wantStatus int
			wantCode   string
			wantFields bool
			wantHeader [2]string
		}{
			{"Known", &errs.Error{Code: codeBad, Message: "bad", Fields: fields}, false, 422, codeBad, true, [2]string{}},
			{"Unauthorized", &errs.Error{Code: "unauthorized", Message: "who?"}, false, 401, "unauthorized", false, [2]string{"WWW-Authenticate", `Bearer realm="svc"`}},
			{"RetryAfter", &errs.Error{Code: codeBad, Message: "slow", RetryAfter: 1500 * time.Millisecond}, false, 422, codeBad, false, [2]string{"Retry-After", "2"}},
			{"UnknownCode", &errs.Error{Code: "mystery", Message: "secret detail"}, false, 500, httpx.CodeInternal, false, [2]string{}},
			{"Unavailable", fmt.Errorf("read: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), false, 503, httpx.CodeUnavailable, false, [2]string{"Retry-After", "1"}},
			{"DependencyDeadline", fmt.Errorf("identity: %w", context.DeadlineExceeded), false, 503, httpx.CodeUnavailable, false, [2]string{"Retry-After", "1"}},
			{"Decode", &httpx.DecodeError{Status: 415, Code: "unsupported_media_type", Message: "json only"}, false, 415, "unsupported_media_type", false, [2]string{}},
			{"Internal", errors.New("boom"), false, 500, httpx.CodeInternal, false, [2]string{}},
			{"Abandoned", context.Canceled, true, 200, "", false, [2]string{}},
		}
		for _, tt := range tests {
			t.Run(env.name+"/"+tt.name, func(t *testing.T) {
				req := httptest.NewRequest(http.MethodPost, "/v1/x", nil)
				if tt.cancel {
					ctx, cancel := context.WithCancel(req.Context())
					cancel()
					req = req.WithContext(ctx)
				}
				rec := httptest.NewRecorder()
				e.Write(rec, req, tt.err)
				if rec.Code != tt.wantStatus {
					t.Fatalf("status %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body.String())
				}
				if tt.wantCode == "" {
					if rec.Body.Len() != 0 {
						t.Errorf("body %q, want none for an abandoned request", rec.Body.String())
					}
					return
				}
				var body struct {
					Code   string            `json:"code"`
					Errors []errs.FieldError `json:"errors"`
					Error  struct {
						Code   string            `json:"code"`
						Fields []errs.FieldError `json:"fields"`
					} `json:"error"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatal(err)
				}
				code, got := body.Code, body.Errors
				if env.name == "ErrorObject" {
					code, got = body.Error.Code, body.Error.Fields
				}
				if code != tt.wantCode {
					t.Errorf("code %q, want %q", code, tt.wantCode)
				}
				if (len(got) > 0) != tt.wantFields {
					t.Errorf("fields %v, want present: %v", got, tt.wantFields)
				}
				if h := tt.wantHeader; h[0] != "" && rec.Header().Get(h[0]) != h[1] {
					t.Errorf("%s = %q, want %q", h[0], rec.Header().Get(h[0]), h[1])
				}
			})
		}
	}
}

// A service whose document fixes its own wording of the 500 and the 503
// gets it; one without gets the kit's.
func TestErrorsMessages(t *testing.T) {
	outage := fmt.Errorf("read: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")})
	tests := []struct {
		name              string
		internal, unavail string
		err               error
		wantStatus        int
		wantMessage       string
	}{
		{"KitInternal", "", "", errors.New("boom"), 500, MsgInternal},
		{"KitUnavailable", "", "", outage, 503, MsgUnavailable},
		{"OwnInternal", "internal error", "down", errors.New("boom"), 500, "internal error"},
		{"OwnUnavailable", "internal error", "down", outage, 503, "down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Errors{Envelope: ErrorObject, InternalMessage: tt.internal, UnavailableMessage: tt.unavail, Logger: slog.New(slog.DiscardHandler)}
			rec := httptest.NewRecorder()
			e.Write(rec, httptest.NewRequest(http.MethodGet, "/v1/x", nil), tt.err)
			var body struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.wantStatus || body.Error.Message != tt.wantMessage {
				t.Errorf("%d %q, want %d %q", rec.Code, body.Error.Message, tt.wantStatus, tt.wantMessage)
			}
		})
	}
}
