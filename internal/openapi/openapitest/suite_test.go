package openapitest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/openapi/openapitest"
)

func TestCheckRoutes(t *testing.T) {
	const routes = `
	mux.HandleFunc("GET /pets/{id}", s.getPet)
	mux.Handle("DELETE /pets/{id}", s.deletePet)
	mux.HandleFunc("POST /pets", s.addPet)
	mux.Handle("/", s.fallback)
`
	for _, tc := range []struct {
		name, routes string
		min          int
		want         string // "" for no report
	}{
		{"Same", routes, 3, ""},
		{"Undocumented", routes + `mux.HandleFunc("PUT /pets/{id}", s.putPet)`, 3, "PUT /pets/{id}"},
		{"Unregistered", strings.Replace(routes, `mux.HandleFunc("POST /pets", s.addPet)`, "", 1), 2, "POST /pets"},
		{"TooFew", routes, 4, "found only 3 routes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &openapitest.Recorder{}
			openapitest.CheckRoutes(rec, []byte(petDoc), []byte(tc.routes), tc.min)
			switch got := rec.String(); {
			case tc.want == "" && got != "":
				t.Errorf("reported matching routes:\n%s", got)
			case !strings.Contains(got, tc.want):
				t.Errorf("report does not mention %q:\n%s", tc.want, got)
			}
		})
	}
}

// petServer answers the pet document's operations conformingly.
func petServer() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /pets/{id}", answer(200, "application/json", `{"id":"`+petID+`","name":"Rex"}`))
	mux.Handle("DELETE /pets/{id}", answer(204, "", ""))
	mux.Handle("POST /pets", answer(422, "application/json", `{"error":{"code":"invalid","message":"no"}}`))
	mux.Handle("/", answer(404, "application/json", `{"error":{"code":"not_found","message":"no such pet"}}`))
	return mux
}

func TestClient(t *testing.T) {
	rec := &openapitest.Recorder{}
	cov := &openapitest.Coverage{}
	c := openapitest.NewClient(rec, []byte(petDoc), petServer(), cov)
	var pet struct{ ID, Name string }
	c.JSON("GET", "/pets/"+petID, "", 200, &pet, openapitest.Bearer("tok"), openapitest.Header("X-Trace", "1"))
	if pet.Name != "Rex" {
		t.Errorf("JSON decoded %+v", pet)
	}
	c.Code("POST", "/pets", `{"name":""}`, 422, "invalid")
	// A second client sharing the coverage adds to it.
	other := openapitest.NewClient(rec, []byte(petDoc), petServer(), c.Coverage())
	other.Code("GET", "/cats", "", 404, "not_found")
	other.Do("DELETE", "/pets/"+petID, "", 204)
	if msgs := rec.Messages(); len(msgs) > 0 {
		t.Fatalf("conforming exchanges reported:\n%s", rec)
	}
	for _, r := range []string{"GET /pets/{id} 200", "POST /pets 422", "UNMATCHED 404", "DELETE /pets/{id} 204"} {
		if !cov.Has(r) {
			t.Errorf("coverage lacks %q", r)
		}
	}
	want := "DELETE /pets/{id} 404, GET /pets/{id} 404, POST /pets 201"
	if got := strings.Join(c.Missed(), ", "); got != want {
		t.Errorf("Missed() = %s, want %s", got, want)
	}
	c.CheckCoverage()
	if got := rec.String(); !strings.Contains(got, "declared responses no request produced") || !strings.Contains(got, "POST /pets 201") {
		t.Errorf("CheckCoverage reported %q", got)
	}
}

func TestClientFailsOnTheWrongAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(c *openapitest.Client)
		want string
	}{
		{"Status", func(c *openapitest.Client) { c.Do("GET", "/pets/"+petID, "", 201) }, "= 200, want 201"},
		{"Code", func(c *openapitest.Client) { c.Code("GET", "/cats", "", 404, "gone") }, `code = "not_found", want "gone"`},
		{"JSON", func(c *openapitest.Client) { var n int; c.JSON("GET", "/pets/"+petID, "", 200, &n) }, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &openapitest.Recorder{}
			c := openapitest.NewClient(rec, []byte(petDoc), petServer(), nil)
			func() {
				defer func() {
					if recover() == nil {
						t.Error("Fatalf was not called")
					}
				}()
				tc.send(c)
			}()
			if !strings.Contains(rec.String(), tc.want) {
				t.Errorf("report does not mention %q:\n%s", tc.want, rec)
			}
			if tc.name == "Status" && c.Coverage().Len() != 0 {
				t.Errorf("an unwanted answer was counted as coverage: %v", c.Coverage())
			}
		})
	}
}

func TestErrorCode(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"code":"not_found","message":"x"}}`:              "not_found",
		`{"type":"about:blank","status":401,"code":"unauthorized"}`: "unauthorized",
		`{"error":{"code":"conflict"},"code":"ignored"}`:            "conflict",
		`{"id":"x"}`: "",
		`not json`:   "",
		`{"error":"a string, not an envelope","code":"still not a match"}`: "",
	} {
		if got := openapitest.ErrorCode([]byte(body)); got != want {
			t.Errorf("ErrorCode(%s) = %q, want %q", body, got, want)
		}
	}
}

func TestExpectReport(t *testing.T) {
	get := func() *http.Request { return httptest.NewRequest("GET", "/pets/"+petID, nil) }
	extra := answer(200, "application/json", `{"id":"`+petID+`","name":"Rex","owner":"x"}`)
	good := answer(200, "application/json", `{"id":"`+petID+`","name":"Rex"}`)
	for _, tc := range []struct {
		name       string
		h          http.Handler
		want       string
		wantReport string // what ExpectReport itself reports; "" for nothing
	}{
		{"DriftCaught", extra, "'owner' not allowed", ""},
		{"ConformingPasses", good, "", ""},
		{"DriftMissed", good, "'owner' not allowed", "the wrapper reported nothing"},
		{"OtherDrift", extra, "missing property", "report does not mention"},
		{"UnexpectedReport", extra, "", "a conforming answer was reported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &openapitest.Recorder{}
			openapitest.ExpectReport(rec, []byte(petDoc), tc.h, get(), tc.want)
			got := rec.String()
			switch {
			case tc.wantReport == "" && got != "":
				t.Errorf("reported:\n%s", got)
			case !strings.Contains(got, tc.wantReport):
				t.Errorf("report does not mention %q:\n%s", tc.wantReport, got)
			}
		})
	}
}

func TestRecorderFatalfPanics(t *testing.T) {
	rec := &openapitest.Recorder{}
	defer func() {
		if p := recover(); p != "stop 1" {
			t.Errorf("recovered %v, want the message", p)
		}
		if rec.String() != "keep 0\nstop 1" {
			t.Errorf("recorded %q", rec.Messages())
		}
	}()
	rec.Errorf("keep %d", 0)
	rec.Fatalf("stop %d", 1)
}
