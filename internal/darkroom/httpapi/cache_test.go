package httpapi_test

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/darkroomtest"
	"github.com/platformco/platform/internal/darkroom/httpapi"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// serveDirect sends one request to h outside the document's client (a
// HEAD, a conditional GET) and returns the answer.
func serveDirect(t *testing.T, h http.Handler, method, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestStoredVariantFromMemory: a variant served from the cache answers
// the same bytes and headers as one read from the store, ranges and
// conditional requests included; a deleted media's variant is 404 at
// once though its bytes are kept.
func TestStoredVariantFromMemory(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		o := e.opts
		o.VariantCacheBytes = -1
		fromStore := httpapi.NewServer(httpapi.Deps{Service: darkroom.NewService(o), Logger: o.Logger})
		m := e.upload(t, darkroomtest.JPEG(t, 900, 600), darkroom.TypeJPEG, darkroom.VisibilityPublic)
		path := "/v1/media/" + m.Media.ID + "/card"
		first := e.c.Do("GET", path, "", http.StatusOK, openapitest.Header("Accept", "image/webp"))
		etag := first.Header().Get("ETag")
		if etag != `"`+hexSum(first.Body.Bytes())+`"` {
			t.Fatalf("etag %s for bytes of %s", etag, hexSum(first.Body.Bytes()))
		}
		for _, tc := range []struct {
			name   string
			method string
			header map[string]string
			status int
		}{
			{"whole", "GET", map[string]string{"Accept": "image/webp"}, http.StatusOK},
			{"head", "HEAD", map[string]string{"Accept": "image/webp"}, http.StatusOK},
			{"range", "GET", map[string]string{"Accept": "image/webp", "Range": "bytes=10-99"}, http.StatusPartialContent},
			{"suffix range", "GET", map[string]string{"Accept": "image/webp", "Range": "bytes=-50"}, http.StatusPartialContent},
			{"unsatisfiable range", "GET", map[string]string{"Accept": "image/webp", "Range": "bytes=999999-"}, http.StatusRequestedRangeNotSatisfiable},
			{"not modified", "GET", map[string]string{"Accept": "image/webp", "If-None-Match": etag}, http.StatusNotModified},
			{"jpeg", "GET", map[string]string{"Accept": "image/jpeg"}, http.StatusOK},
		} {
			t.Run(tc.name, func(t *testing.T) {
				store := serveDirect(t, fromStore, tc.method, path, tc.header)
				mem := serveDirect(t, e.h, tc.method, path, tc.header)
				if store.Code != tc.status || mem.Code != tc.status {
					t.Fatalf("status %d from the store, %d from memory; want %d", store.Code, mem.Code, tc.status)
				}
				hs, hm := store.Header().Clone(), mem.Header().Clone()
				hs.Del("Date")
				hm.Del("Date")
				if !maps.EqualFunc(hs, hm, slices.Equal) {
					t.Fatalf("headers differ:\nstore  %v\nmemory %v", hs, hm)
				}
				if !bytes.Equal(store.Body.Bytes(), mem.Body.Bytes()) {
					t.Fatal("bodies differ")
				}
			})
		}

		// The bytes now come from memory: with the object gone (and the
		// row kept) the cached service still answers them exactly.
		if err := e.objects.Delete(t.Context(), darkroom.VariantKey(m.Media.ID, "card", "webp")); err != nil {
			t.Fatal(err)
		}
		w := e.c.Do("GET", path, "", http.StatusOK, openapitest.Header("Accept", "image/webp"))
		if !bytes.Equal(w.Body.Bytes(), first.Body.Bytes()) || w.Header().Get("ETag") != etag {
			t.Fatal("the cached variant differs from the first answer")
		}
		if w := serveDirect(t, fromStore, "GET", path, map[string]string{"Accept": "image/webp"}); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("without the cache: %d, want 503 (the object is gone)", w.Code)
		}

		// Deleted: 404 at once, though the bytes are still kept.
		e.c.Do("DELETE", "/v1/media/"+m.Media.ID, "", http.StatusNoContent, openapitest.Bearer(e.owner))
		e.c.Code("GET", path, "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Header("Accept", "image/webp"))
	})
}

// TestOversizeVariantNotKept: a variant over the entry bound is read from
// the store on every request.
func TestOversizeVariantNotKept(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, func(o *darkroom.Options) { o.VariantCacheEntryBytes = 64 })
		m := e.upload(t, darkroomtest.JPEG(t, 900, 600), darkroom.TypeJPEG, darkroom.VisibilityPublic)
		path := "/v1/media/" + m.Media.ID + "/card"
		first := e.c.Do("GET", path, "", http.StatusOK, openapitest.Header("Accept", "image/webp"))
		if len(first.Body.Bytes()) <= 64 {
			t.Fatalf("the variant has %d bytes, not over the bound", len(first.Body.Bytes()))
		}
		again := e.c.Do("GET", path, "", http.StatusOK, openapitest.Header("Accept", "image/webp"))
		if !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Fatal("the second read differs")
		}
		if err := e.objects.Delete(t.Context(), darkroom.VariantKey(m.Media.ID, "card", "webp")); err != nil {
			t.Fatal(err)
		}
		e.c.Code("GET", path, "", http.StatusServiceUnavailable, darkroom.CodeUnavailable, openapitest.Header("Accept", "image/webp"))
	})
}
