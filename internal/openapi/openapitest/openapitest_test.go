package openapitest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/openapi"
	"github.com/platformco/platform/internal/openapi/openapitest"
)

// petDoc is a small document in the platform's style: closed schemas, an
// error envelope, a 204 without content and a fallback for unmatched
// requests.
const petDoc = `{
  "openapi": "3.1.0",
  "info": {"title": "Pets", "version": "1"},
  "x-unmatched-responses": {"404": {"$ref": "#/components/responses/NotFound"}},
  "paths": {
    "/pets/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}}],
      "get": {
        "operationId": "getPet",
        "responses": {
          "200": {"description": "The pet.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "delete": {
        "operationId": "deletePet",
        "responses": {"204": {"description": "Gone."}, "404": {"$ref": "#/components/responses/NotFound"}}
      }
    },
    "/pets": {
      "post": {
        "operationId": "addPet",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}}},
        "responses": {
          "201": {"description": "Added.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
          "422": {"description": "Refused.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      }
    }
  },
  "components": {
    "schemas": {
      "Pet": {"type": "object", "required": ["id", "name"], "additionalProperties": false,
              "properties": {"id": {"type": "string", "format": "uuid"}, "name": {"type": "string"}}},
      "NewPet": {"type": "object", "required": ["name"], "additionalProperties": false,
                 "properties": {"name": {"type": "string", "minLength": 1}}},
      "Error": {"type": "object", "required": ["error"], "additionalProperties": false,
                "properties": {"error": {"type": "object", "required": ["code", "message"], "additionalProperties": false,
                  "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
    },
    "responses": {
      "NotFound": {"description": "No such pet.", "content": {"application/json": {"schema": {
        "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"properties": {"code": {"const": "not_found"}}}}}]}}}}
    }
  }
}`

const petID = "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d"

// recorder is a TB that keeps what is reported.
type recorder struct {
	mu    sync.Mutex
	msgs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
}
func (r *recorder) text() string { return strings.Join(r.msgs, "\n") }

// answer is a handler that answers a fixed status, content type and body.
func answer(status int, ctype, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

func TestWrap(t *testing.T) {
	pet := `{"id":"` + petID + `","name":"Rex"}`
	notFound := `{"error":{"code":"not_found","message":"no such pet"}}`
	for _, tc := range []struct {
		name          string
		method, path  string
		reqType, body string
		h             http.Handler
		want          string // "" for no report
	}{
		{"OK", "GET", "/pets/" + petID, "", "", answer(200, "application/json", pet), ""},
		{"DeclaredError", "GET", "/pets/" + petID, "", "", answer(404, "application/json", notFound), ""},
		{"NoContent", "DELETE", "/pets/" + petID, "", "", answer(204, "", ""), ""},
		{"Created", "POST", "/pets", "application/json", `{"name":"Rex"}`, answer(201, "application/json", pet), ""},
		{"JSONWithoutContentType", "POST", "/pets", "", `{"name":"Rex"}`, answer(201, "application/json", pet), ""},
		{"InvalidRequestRefused", "POST", "/pets", "application/json", `{"name":""}`, answer(422, "application/json", `{"error":{"code":"invalid","message":"name"}}`), ""},
		{"UnmatchedDeclared", "GET", "/cats", "", "", answer(404, "application/json", notFound), ""},

		{"ExtraField", "GET", "/pets/" + petID, "", "", answer(200, "application/json", `{"id":"`+petID+`","name":"Rex","owner":"x"}`), "'owner' not allowed"},
		{"MissingField", "GET", "/pets/" + petID, "", "", answer(200, "application/json", `{"id":"`+petID+`"}`), "missing property 'name'"},
		{"BadFormat", "GET", "/pets/" + petID, "", "", answer(200, "application/json", `{"id":"7","name":"Rex"}`), "uuid"},
		{"UndeclaredStatus", "GET", "/pets/" + petID, "", "", answer(500, "application/json", notFound), "'500' does not exist"},
		{"UndeclaredContentType", "GET", "/pets/" + petID, "", "", answer(200, "text/html", "<p>"), "text/html"},
		{"SniffedContentType", "GET", "/pets/" + petID, "", "", answer(200, "", "hello"), "text/plain"},
		{"EmptyBody", "GET", "/pets/" + petID, "", "", answer(200, "application/json", ""), "its body is empty"},
		{"BodyOnNoContent", "DELETE", "/pets/" + petID, "", "", answer(204, "application/json", `{}`), "declared without content"},
		{"NestedErrorCode", "GET", "/pets/" + petID, "", "", answer(404, "application/json", `{"error":{"code":"gone","message":"x"}}`), "not_found"},
		{"AcceptedInvalidRequest", "POST", "/pets", "application/json", `{"name":"Rex","age":3}`, answer(201, "application/json", pet), "accepted a request the document refuses"},
		{"UnmatchedUndeclaredStatus", "PUT", "/pets/" + petID, "", "", answer(405, "application/json", `{}`), "declares 404, not 405"},
		{"UnmatchedWrongBody", "GET", "/cats", "", "", answer(404, "application/json", `{"error":{"code":"nope","message":"x"}}`), "breaks its schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r := httptest.NewRequest(tc.method, tc.path, body)
			if tc.reqType != "" {
				r.Header.Set("Content-Type", tc.reqType)
			}
			rec := &recorder{}
			w := httptest.NewRecorder()
			openapitest.Wrap(rec, []byte(petDoc), tc.h).ServeHTTP(w, r)
			if rec.fatal {
				t.Fatalf("the document did not load: %s", rec.text())
			}
			switch {
			case tc.want == "" && len(rec.msgs) > 0:
				t.Errorf("reported a conforming exchange:\n%s", rec.text())
			case tc.want != "" && !strings.Contains(rec.text(), tc.want):
				t.Errorf("report does not mention %q:\n%s", tc.want, rec.text())
			}
			// The wrapper passes the answer through untouched.
			if tc.h != nil {
				want := httptest.NewRecorder()
				tc.h.ServeHTTP(want, httptest.NewRequest(tc.method, tc.path, nil))
				if w.Code != want.Code || w.Body.String() != want.Body.String() {
					t.Errorf("passed through %d %q, want %d %q", w.Code, w.Body, want.Code, want.Body)
				}
			}
		})
	}
}

func TestWrapPassesTheRequestBody(t *testing.T) {
	var got string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, `{"id":"`+petID+`","name":"Rex"}`)
	})
	rec := &recorder{}
	r := httptest.NewRequest("POST", "/pets", strings.NewReader(`{"name":"Rex"}`))
	r.Header.Set("Content-Type", "application/json")
	openapitest.Wrap(rec, []byte(petDoc), h).ServeHTTP(httptest.NewRecorder(), r)
	if got != `{"name":"Rex"}` {
		t.Errorf("handler read %q", got)
	}
	if len(rec.msgs) > 0 {
		t.Errorf("reported: %s", rec.text())
	}
}

func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/openapi.json" {
			openapi.Handler([]byte(petDoc)).ServeHTTP(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"id":"`+petID+`","name":"Rex","extra":true}`)
	}))
	defer srv.Close()
	rec := &recorder{}
	client := &http.Client{Transport: openapitest.Transport(rec, []byte(petDoc), nil)}
	res, err := client.Get(srv.URL + "/pets/" + petID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if !strings.Contains(string(body), `"extra":true`) {
		t.Errorf("the client did not get the body: %q", body)
	}
	if !strings.Contains(rec.text(), "'extra' not allowed") {
		t.Errorf("want a report of the extra field, got:\n%s", rec.text())
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"NotJSON", `openapi: 3.1.0`, "not JSON"},
		{"OpenAPI30", strings.Replace(petDoc, `"3.1.0"`, `"3.0.3"`, 1), "want 3.1.x"},
		{"InvalidDocument", strings.Replace(petDoc, `"description": "Gone."`, `"summary": "Gone."`, 1), "not a valid OpenAPI 3.1 document"},
		{"OpenSchema", strings.Replace(petDoc, `"required": ["name"], "additionalProperties": false,`, `"required": ["name"],`, 1), "/components/schemas/NewPet: object schema does not declare additionalProperties"},
		{"NestedOpenSchema", strings.Replace(petDoc, `"required": ["code", "message"], "additionalProperties": false,`, `"required": ["code", "message"],`, 1), "/components/schemas/Error/properties/error"},
		{"DefaultResponse", strings.Replace(petDoc, `"204": {"description": "Gone."}`, `"default": {"description": "Gone."}`, 1), "responses/default"},
		{"BrokenFallback", strings.Replace(petDoc, `"404": {"$ref": "#/components/responses/NotFound"}}`, `"404": {"$ref": "#/components/responses/Nope"}}`, 1), "#/components/responses/Nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openapitest.Load([]byte(tc.doc))
			if err == nil {
				t.Fatalf("loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestResponsesAndRoute(t *testing.T) {
	d, err := openapitest.Load([]byte(petDoc))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(d.Responses(), ", ")
	want := "DELETE /pets/{id} 204, DELETE /pets/{id} 404, GET /pets/{id} 200, GET /pets/{id} 404, POST /pets 201, POST /pets 422, UNMATCHED 404"
	if got != want {
		t.Errorf("Responses() = %s\nwant %s", got, want)
	}
	if route, ok := d.Route(httptest.NewRequest("GET", "/pets/"+petID, nil)); !ok || route != "GET /pets/{id}" {
		t.Errorf("Route = %q, %v", route, ok)
	}
	if route, ok := d.Route(httptest.NewRequest("PUT", "/pets/"+petID, nil)); ok {
		t.Errorf("Route(PUT) = %q, want no match", route)
	}
}

func TestHandlerServesTheDocument(t *testing.T) {
	w := httptest.NewRecorder()
	openapi.Handler([]byte(petDoc)).ServeHTTP(w, httptest.NewRequest("GET", "/openapi.json", nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != petDoc {
		t.Errorf("got %d %q, %d bytes", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
	}
	w = httptest.NewRecorder()
	openapi.Handler([]byte(petDoc)).ServeHTTP(w, httptest.NewRequest("HEAD", "/openapi.json", nil))
	if w.Body.Len() != 0 || w.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD: %d bytes, Content-Length %q", w.Body.Len(), w.Header().Get("Content-Length"))
	}
}
