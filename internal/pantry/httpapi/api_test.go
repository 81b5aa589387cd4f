package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/pantry/httpapi"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestRoutesMatchTheDocument(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckRoutes(t, httpapi.OpenAPI(), src, 13)
}

func TestPublishReadChangeDelete(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		p := e.publish(t, `{"name":"Kettle","summary":"Boils","description":"# Kettle\n\nBoils *water*.","tags":["cli","go","cli"],
			"uses":["kit","identity"],"homepage_url":"https://kettle.example","logo_media_id":"`+e.darkroom.public+`"}`)
		if p.Project.Slug != "kettle" || strings.Join(p.Project.Tags, ",") != "cli,go" || strings.Join(p.Project.Uses, ",") != "identity,kit" ||
			p.Project.CreatedBy == nil || !strings.Contains(p.Project.DescriptionHTML, "<em>water</em>") {
			t.Fatalf("published %+v", p.Project)
		}

		// Public read: ETag, Cache-Control, 304.
		res := e.c.Do("GET", "/v1/projects/kettle", "", http.StatusOK)
		etag := res.Header().Get("ETag")
		if etag == "" || res.Header().Get("Cache-Control") != "public, max-age=60" {
			t.Fatalf("headers %v", res.Header())
		}
		e.c.Do("GET", "/v1/projects/kettle", "", http.StatusNotModified, openapitest.Header("If-None-Match", etag))
		e.c.Code("GET", "/v1/projects/nothing-here", "", http.StatusNotFound, "not_found")

		// Roles: a member may change, not publish or delete; a stranger nothing.
		e.c.Code("POST", "/v1/accounts/"+account+"/projects", `{"name":"Pot"}`, http.StatusForbidden, "forbidden", openapitest.Bearer(e.member))
		e.c.Code("PATCH", "/v1/projects/kettle", `{"summary":"x"}`, http.StatusForbidden, "forbidden", openapitest.Bearer(e.stranger))
		e.c.Code("PATCH", "/v1/projects/kettle", `{"summary":"x"}`, http.StatusUnauthorized, "unauthenticated")
		e.c.Code("PATCH", "/v1/projects/kettle", `{"summary":"x"}`, http.StatusUnauthorized, "unauthenticated", openapitest.Bearer("not-a-token"))
		e.c.Code("DELETE", "/v1/projects/kettle", "", http.StatusForbidden, "forbidden", openapitest.Bearer(e.member))
		var changed projectBody
		e.c.JSON("PATCH", "/v1/projects/kettle", `{"slug":"kettle-pro","name":"Kettle Pro"}`, http.StatusOK, &changed, openapitest.Bearer(e.member))
		if changed.Project.Slug != "kettle-pro" {
			t.Fatalf("renamed %+v", changed.Project)
		}
		// The old slug answers 301, stays taken, and still names it in writes.
		res = e.c.Do("GET", "/v1/projects/kettle", "", http.StatusMovedPermanently)
		if loc := res.Header().Get("Location"); loc != "/v1/projects/kettle-pro" {
			t.Fatalf("Location = %q", loc)
		}
		e.c.Code("POST", "/v1/accounts/"+account+"/projects", `{"name":"Kettle"}`, http.StatusConflict, "slug_taken", openapitest.Bearer(e.owner))
		e.c.JSON("PATCH", "/v1/projects/kettle", `{"summary":"Boils fast"}`, http.StatusOK, &changed, openapitest.Bearer(e.admin))
		e.c.Do("GET", "/v1/projects/kettle-pro", "", http.StatusOK, openapitest.Header("If-None-Match", etag)) // changed: no 304

		// API keys: projects:write publishes (no user recorded); others may not.
		var byKey projectBody
		e.c.JSON("POST", "/v1/accounts/"+account+"/projects", `{"name":"Robot"}`, http.StatusCreated, &byKey, openapitest.Bearer(keyWrite))
		if byKey.Project.CreatedBy != nil {
			t.Fatalf("created_by = %v for a key", *byKey.Project.CreatedBy)
		}
		e.c.Code("POST", "/v1/accounts/"+account+"/projects", `{"name":"Robot Two"}`, http.StatusForbidden, "insufficient_scope", openapitest.Bearer(keyRead))
		e.c.Code("DELETE", "/v1/projects/robot", "", http.StatusForbidden, "insufficient_scope", openapitest.Bearer(keyRead))
		e.c.Do("DELETE", "/v1/projects/robot", "", http.StatusNoContent, openapitest.Bearer(keyWrite))

		e.c.Do("DELETE", "/v1/projects/kettle-pro", "", http.StatusNoContent, openapitest.Bearer(e.admin))
		e.c.Code("GET", "/v1/projects/kettle-pro", "", http.StatusNotFound, "not_found")
		e.c.Code("GET", "/v1/projects/kettle", "", http.StatusNotFound, "not_found")
		e.c.Code("DELETE", "/v1/projects/kettle-pro", "", http.StatusNotFound, "not_found", openapitest.Bearer(e.admin))
	})
}

func fieldCodes(t *testing.T, body []byte) string {
	t.Helper()
	var p struct {
		Errors []struct{ Field, Code string } `json:"errors"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range p.Errors {
		out = append(out, f.Field+":"+f.Code)
	}
	return strings.Join(out, ",")
}

func TestFieldRules(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		e.publish(t, `{"name":"Taken"}`)
		for _, tc := range []struct {
			name, body string
			status     int
			code       string
			fields     string
		}{
			{"reserved slug", `{"name":"X project","slug":"admin"}`, 422, "validation_failed", "slug:slug_reserved"},
			{"reserved from name", `{"name":"New"}`, 422, "validation_failed", "name:slug_reserved"},
			{"mixed-script slug", `{"name":"Acme","slug":"аcme"}`, 422, "validation_failed", "slug:slug_mixed_scripts"},
			{"mixed-script name", `{"name":"Аcme"}`, 422, "validation_failed", "name:mixed_scripts"},
			{"upper-case slug", `{"name":"Acme","slug":"Acme"}`, 422, "validation_failed", "slug:slug_invalid"},
			{"double dash", `{"name":"Acme","slug":"ac--me"}`, 422, "validation_failed", "slug:slug_invalid"},
			{"short slug", `{"name":"Acme","slug":"ab"}`, 422, "validation_failed", "slug:slug_too_short"},
			{"no name", `{"slug":"nameless"}`, 422, "validation_failed", "name:required"},
			{"long name", `{"name":"` + strings.Repeat("n", 81) + `"}`, 422, "validation_failed", "name:too_long"},
			{"bidi name", `{"name":"Evil\u202eName"}`, 422, "validation_failed", "name:invisible_characters"},
			{"long summary", `{"name":"Acme","summary":"` + strings.Repeat("s", 201) + `"}`, 422, "validation_failed", "summary:too_long"},
			{"zero-width summary", `{"name":"Acme","summary":"a\u200bb"}`, 422, "validation_failed", "summary:invisible_characters"},
			{"huge description", `{"name":"Acme","description":"` + strings.Repeat("d", 20<<10+1) + `"}`, 422, "validation_failed", "description:too_long"},
			{"http url", `{"name":"Acme","homepage_url":"http://acme.example"}`, 422, "validation_failed", "homepage_url:not_https"},
			{"credentials", `{"name":"Acme","repository_url":"https://u:p@git.example/acme"}`, 422, "validation_failed", "repository_url:credentials_in_url"},
			{"javascript url", `{"name":"Acme","homepage_url":"javascript:alert(1)"}`, 422, "validation_failed", "homepage_url:invalid"},
			{"nine tags", `{"name":"Acme","tags":["a","b","c","d","e","f","g","h","i"]}`, 422, "validation_failed", "tags:too_many"},
			{"bad tag", `{"name":"Acme","tags":["Not A Tag"]}`, 422, "validation_failed", "tags:invalid"},
			{"unknown use", `{"name":"Acme","uses":["billing"]}`, 422, "validation_failed", "uses:unknown_value"},
			{"visibility", `{"name":"Acme","visibility":"secret"}`, 422, "validation_failed", "visibility:unknown_value"},
			{"private logo", `{"name":"Acme","logo_media_id":"` + e.darkroom.private + `"}`, 422, "logo_not_public", "logo_media_id:not_public"},
			{"missing logo", `{"name":"Acme","logo_media_id":"0190a0a0-0000-7000-8000-000000000000"}`, 422, "logo_not_public", "logo_media_id:not_public"},
			{"slug collides", `{"name":"Taken"}`, 409, "slug_taken", "slug:taken"},
			{"unknown field", `{"name":"Acme","stars":5}`, 400, "malformed_json", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := e.c.Code("POST", "/v1/accounts/"+account+"/projects", tc.body, tc.status, tc.code, openapitest.Bearer(e.owner))
				if tc.fields != "" {
					if got := fieldCodes(t, res.Body.Bytes()); got != tc.fields {
						t.Errorf("fields = %s, want %s", got, tc.fields)
					}
				}
			})
		}
		// A slug in another script than Latin, alone, is a slug.
		p := e.publish(t, `{"name":"Чайник","slug":"чайник"}`)
		if p.Project.Slug != "чайник" {
			t.Fatalf("slug = %q", p.Project.Slug)
		}
	})
}

func TestDescriptionRendersSafe(t *testing.T) {
	md := "<script>alert(1)</script>\n\n[click](javascript:alert(1)) <img src=x onerror=alert(1)>\n\n" +
		"![px](data:image/png;base64,iVBORw0KGgo=) <iframe src=\"https://evil.example\"></iframe>\n\n" +
		strings.Repeat("- ", 500) + "deep\n\n[fine](https://docs.example/start) **bold**\n"
	body, _ := json.Marshal(map[string]any{"name": "Safe", "description": md})
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		p := e.publish(t, string(body))
		html := strings.ToLower(p.Project.DescriptionHTML)
		for _, bad := range []string{"<script", "javascript:", "onerror=", "<iframe", "<img src=\"x", `="data:`} {
			if strings.Contains(html, bad) {
				t.Errorf("rendered HTML holds %q:\n%s", bad, p.Project.DescriptionHTML)
			}
		}
		// Markdown still renders: the safe link, the emphasis, the
		// innermost item of the 500-deep list; the source comes back as sent (trimmed).
		for _, good := range []string{`<a href="https://docs.example/start"`, "<strong>bold</strong>", "deep"} {
			if !strings.Contains(p.Project.DescriptionHTML, good) {
				t.Errorf("rendered HTML lacks %q:\n%.400s", good, p.Project.DescriptionHTML)
			}
		}
		if p.Project.Description != strings.TrimSpace(md) {
			t.Error("the Markdown source did not come back as sent")
		}
	})
}

func TestIdentityDownWritesFailReadsServe(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		e.publish(t, `{"name":"Steady"}`)
		e.identity.setDown(true)
		e.c.Code("POST", "/v1/accounts/"+account+"/projects", `{"name":"Later"}`, http.StatusServiceUnavailable, "unavailable", openapitest.Bearer(e.owner))
		e.c.Code("PATCH", "/v1/projects/steady", `{"summary":"x"}`, http.StatusServiceUnavailable, "unavailable", openapitest.Bearer(e.owner))
		e.c.Do("GET", "/v1/projects/steady", "", http.StatusOK)
		e.c.Do("GET", "/v1/projects?q=steady", "", http.StatusOK)
		e.c.Do("GET", "/v1/tags", "", http.StatusOK)
		// Darkroom gone: a new logo cannot be checked, so the write waits.
		e.identity.setDown(false)
		e.darkroom.Close()
		e.c.Code("PATCH", "/v1/projects/steady", `{"logo_media_id":"`+e.darkroom.public+`"}`, http.StatusServiceUnavailable, "unavailable", openapitest.Bearer(e.owner))
	})
}

func TestListSearchTagsOverHTTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		e.publish(t, `{"name":"Lantern","summary":"Lights","tags":["light"],"uses":["kit"]}`)
		e.publish(t, `{"name":"Candle","description":"A lantern alternative","tags":["light","wax"]}`)
		e.publish(t, `{"name":"Shadow","visibility":"unlisted","tags":["light"],"description":"lantern"}`)
		var page struct {
			Projects []struct {
				Slug string `json:"slug"`
			} `json:"projects"`
			NextCursor *string `json:"next_cursor"`
		}
		res := e.c.Do("GET", "/v1/projects?q=lantern", "", http.StatusOK)
		if err := json.Unmarshal(res.Body.Bytes(), &page); err != nil || len(page.Projects) != 2 || page.Projects[0].Slug != "lantern" {
			t.Fatalf("search = %s", res.Body)
		}
		e.c.Do("GET", "/v1/projects?q=lantern", "", http.StatusNotModified, openapitest.Header("If-None-Match", res.Header().Get("ETag")))
		for _, q := range []string{`"unclosed`, `a:*`, `NEAR(x y)`, `{name}:x`, `-`, `(`, `!x | y <-> z`, `'`} {
			e.c.Do("GET", "/v1/projects?q="+urlQuery(q), "", http.StatusOK)
		}
		e.c.JSON("GET", "/v1/projects?limit=1&sort=name", "", http.StatusOK, &page)
		if len(page.Projects) != 1 || page.Projects[0].Slug != "candle" || page.NextCursor == nil {
			t.Fatalf("page 1 = %+v", page)
		}
		e.c.JSON("GET", "/v1/projects?limit=1&sort=name&cursor="+*page.NextCursor, "", http.StatusOK, &page)
		if len(page.Projects) != 1 || page.Projects[0].Slug != "lantern" || page.NextCursor != nil {
			t.Fatalf("page 2 = %+v", page)
		}
		e.c.JSON("GET", "/v1/projects?uses=kit", "", http.StatusOK, &page)
		if len(page.Projects) != 1 {
			t.Fatalf("uses=kit: %+v", page)
		}
		for _, bad := range []string{"sort=best", "limit=0", "limit=101", "tag=No%20Tag", "uses=billing", "cursor=zzz", "q=a%00b"} {
			e.c.Code("GET", "/v1/projects?"+bad, "", http.StatusUnprocessableEntity, "validation_failed")
		}
		res = e.c.Do("GET", "/v1/tags", "", http.StatusOK)
		if got := strings.TrimSpace(res.Body.String()); got != `{"tags":[{"tag":"light","count":2},{"tag":"wax","count":1}]}` {
			t.Fatalf("tags = %s", got)
		}
	})
}

func urlQuery(s string) string {
	r := httptest.NewRequest("GET", "/", nil)
	q := r.URL.Query()
	q.Set("x", s)
	return strings.TrimPrefix(q.Encode(), "x=")
}

func TestStarsExactOverHTTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		e.publish(t, `{"name":"Starry"}`)
		users := make([]string, 100)
		for i := range users {
			users[i] = e.identity.user(t, nil)
		}
		var wg sync.WaitGroup
		for _, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := httptest.NewRequest("PUT", "/v1/projects/starry/star", nil)
				r.Header.Set("Authorization", "Bearer "+u)
				w := httptest.NewRecorder()
				e.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Errorf("star: %d %s", w.Code, w.Body)
				}
			}()
		}
		wg.Wait()
		var p projectBody
		e.c.JSON("GET", "/v1/projects/starry", "", http.StatusOK, &p)
		if p.Project.Stars != 100 {
			t.Fatalf("stars = %d, want 100", p.Project.Stars)
		}
		var star struct {
			Stars int64 `json:"stars"`
		}
		e.c.JSON("PUT", "/v1/projects/starry/star", "", http.StatusOK, &star, openapitest.Bearer(users[0]))
		e.c.JSON("DELETE", "/v1/projects/starry/star", "", http.StatusOK, &star, openapitest.Bearer(users[0]))
		if star.Stars != 99 {
			t.Fatalf("after unstar: %d", star.Stars)
		}
		var mine struct {
			Projects []json.RawMessage `json:"projects"`
		}
		e.c.JSON("GET", "/v1/me/stars", "", http.StatusOK, &mine, openapitest.Bearer(users[1]))
		if len(mine.Projects) != 1 {
			t.Fatalf("my stars = %d", len(mine.Projects))
		}
		e.c.Code("PUT", "/v1/projects/starry/star", "", http.StatusUnauthorized, "unauthenticated")
		e.c.Code("PUT", "/v1/projects/starry/star", "", http.StatusUnauthorized, "unauthenticated", openapitest.Bearer(keyWrite))
		e.c.Code("GET", "/v1/me/stars", "", http.StatusUnauthorized, "unauthenticated")
		e.c.Code("PUT", "/v1/projects/nowhere/star", "", http.StatusNotFound, "not_found", openapitest.Bearer(users[0]))
	})
}

func TestWithoutDatabase(t *testing.T) {
	c := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{}), coverage)
	c.Do("GET", "/healthz", "", http.StatusOK)
	c.Do("GET", "/readyz", "", http.StatusOK)
	c.Do("GET", "/openapi.json", "", http.StatusOK)
	w := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{Waiting: true}), coverage)
	w.Code("GET", "/v1/projects", "", http.StatusServiceUnavailable, "unavailable")
}

// TestAccountProjectsForMembers: an account's own list holds its public
// and unlisted projects, by name, for every role and a projects:write
// key; anyone else is refused, and identity down is 503.
func TestAccountProjectsForMembers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		e.publish(t, `{"name":"Zither"}`)
		e.publish(t, `{"name":"Anvil","visibility":"unlisted"}`)
		path := "/v1/accounts/" + account + "/projects"
		for _, who := range []string{e.owner, e.admin, e.member, keyWrite} {
			var got struct {
				Projects []struct {
					Slug       string `json:"slug"`
					Visibility string `json:"visibility"`
				} `json:"projects"`
			}
			res := e.c.Do("GET", path, "", http.StatusOK, openapitest.Bearer(who))
			if err := json.Unmarshal(res.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Projects) != 2 || got.Projects[0].Slug != "anvil" || got.Projects[0].Visibility != "unlisted" || got.Projects[1].Slug != "zither" {
				t.Fatalf("the account's projects = %+v", got.Projects)
			}
			if cc := res.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
		}
		e.c.Code("GET", path, "", http.StatusUnauthorized, "unauthenticated")
		e.c.Code("GET", path, "", http.StatusForbidden, "insufficient_scope", openapitest.Bearer(keyRead))
		e.c.Code("GET", path, "", http.StatusForbidden, "forbidden", openapitest.Bearer(e.stranger))
		e.c.Code("GET", "/v1/accounts/not-an-id/projects", "", http.StatusNotFound, "not_found", openapitest.Bearer(e.owner))
		e.identity.setDown(true)
		e.c.Code("GET", path, "", http.StatusServiceUnavailable, "unavailable", openapitest.Bearer(e.member))
	})
}
