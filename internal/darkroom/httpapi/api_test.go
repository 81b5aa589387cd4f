package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/darkroomtest"
	"github.com/platformco/platform/internal/darkroom/httpapi"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestRoutesMatchTheDocument(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckRoutes(t, httpapi.OpenAPI(), src, 7)
}

func TestPresignedUploadReadLinkDelete(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		data := darkroomtest.PNG(t, 64, 48)
		u := e.startUpload(t, data, darkroom.TypePNG, darkroom.VisibilityPrivate)
		if u.Upload.Headers["x-amz-checksum-sha256"] == "" || u.Upload.Headers["Content-Type"] != darkroom.TypePNG {
			t.Fatalf("headers %v", u.Upload.Headers)
		}
		// Completing before the PUT: the object is absent.
		e.c.Code("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusConflict, darkroom.CodeObjectAbsent, openapitest.Bearer(e.owner))
		put(t, u, data)
		// Someone else's upload is not theirs to complete.
		e.c.Code("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.other))
		var m, again mediaBody
		e.c.JSON("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusOK, &m, openapitest.Bearer(e.owner))
		e.c.JSON("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusOK, &again, openapitest.Bearer(e.owner))
		if m != again || m.Media.ID != u.Upload.ID || m.Media.Width != 64 || m.Media.Height != 48 || m.Media.SHA256 != hexSum(data) ||
			m.Media.OwnerID != e.ownerID {
			t.Fatalf("completed %+v then %+v", m, again)
		}
		path := "/v1/media/" + m.Media.ID

		// The owner reads it; nobody else learns it exists.
		w := e.c.Do("GET", path, "", http.StatusOK, openapitest.Bearer(e.owner))
		if !bytes.Equal(w.Body.Bytes(), data) || w.Header().Get("ETag") != `"`+hexSum(data)+`"` ||
			w.Header().Get("Cache-Control") != httpapi.CachePrivate {
			t.Fatalf("read: %v", w.Header())
		}
		e.c.Code("GET", path, "", http.StatusNotFound, darkroom.CodeNotFound)
		e.c.Code("GET", path, "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.other))
		e.c.Code("GET", path, "", http.StatusUnauthorized, darkroom.CodeUnauthenticated, openapitest.Bearer("not-a-token"))
		// Range, ETag.
		w = e.c.Do("GET", path, "", http.StatusPartialContent, openapitest.Bearer(e.owner), openapitest.Header("Range", "bytes=0-7"))
		if !bytes.Equal(w.Body.Bytes(), data[:8]) {
			t.Fatalf("range: %q", w.Body.Bytes())
		}
		e.c.Do("GET", path, "", http.StatusNotModified, openapitest.Bearer(e.owner), openapitest.Header("If-None-Match", `"`+hexSum(data)+`"`))

		// A signed link opens it, until it expires; a tampered one never.
		var l struct {
			Link struct {
				URL string `json:"url"`
			} `json:"link"`
		}
		e.c.JSON("POST", path+"/links", `{"ttl":3600}`, http.StatusCreated, &l, openapitest.Bearer(e.owner))
		e.c.Do("GET", l.Link.URL, "", http.StatusOK)
		e.c.Do("GET", strings.Replace(l.Link.URL, "/"+m.Media.ID, "/"+m.Media.ID+"/thumb", 1), "", http.StatusOK)
		e.c.Code("GET", l.Link.URL[:len(l.Link.URL)-2]+"xx", "", http.StatusNotFound, darkroom.CodeNotFound)
		e.c.Code("GET", strings.Replace(l.Link.URL, "exp=", "exp=1", 1), "", http.StatusNotFound, darkroom.CodeNotFound)
		e.c.Code("POST", path+"/links", `{"ttl":3600}`, http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.other))
		e.c.Code("POST", path+"/links", `{"ttl":604801}`, http.StatusUnprocessableEntity, darkroom.CodeValidation, openapitest.Bearer(e.owner))
		e.c.Code("POST", path+"/links", `{"ttl":"soon"}`, http.StatusBadRequest, "malformed_json", openapitest.Bearer(e.owner))
		e.now = e.now.Add(2 * time.Hour)
		e.c.Code("GET", l.Link.URL, "", http.StatusNotFound, darkroom.CodeNotFound)

		// Deletion takes the original and every variant.
		e.c.Do("GET", path+"/card", "", http.StatusOK, openapitest.Bearer(e.owner))
		e.c.Code("DELETE", path, "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.other))
		e.c.Do("DELETE", path, "", http.StatusNoContent, openapitest.Bearer(e.owner))
		e.c.Code("GET", path, "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.owner))
		e.c.Code("DELETE", path, "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.owner))
		for _, k := range []string{darkroom.OriginalKey(m.Media.ID), darkroom.VariantKey(m.Media.ID, "card", "png"), darkroom.VariantKey(m.Media.ID, "thumb", "png")} {
			if e.objectExists(t, k) {
				t.Errorf("%s survived the delete", k)
			}
		}
		var n int
		if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM variants`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("variant rows %d, %v", n, err)
		}
	})
}

func TestCompletionRefusesWhatWasNotDeclared(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		png := darkroomtest.PNG(t, 8, 8)
		for _, tc := range []struct {
			name     string
			declared []byte
			sent     []byte
			ct       string
			code     string
		}{
			{"other bytes", png, darkroomtest.PNG(t, 9, 9), darkroom.TypePNG, darkroom.CodeChecksumMismatch},
			{"pdf declared as png", darkroomtest.PDF(), darkroomtest.PDF(), darkroom.TypePNG, darkroom.CodeContentTypeMismatch},
			{"polyglot", darkroomtest.Polyglot(t), darkroomtest.Polyglot(t), darkroom.TypePNG, darkroom.CodeContentTypeMismatch},
			{"truncated", darkroomtest.Truncated(t), darkroomtest.Truncated(t), darkroom.TypePNG, darkroom.CodeInvalidImage},
			{"decompression bomb", darkroomtest.Bomb(), darkroomtest.Bomb(), darkroom.TypePNG, darkroom.CodeInvalidImage},
		} {
			u := e.startUpload(t, tc.declared, tc.ct, darkroom.VisibilityPublic)
			// The development store does not check the checksum header, so
			// the completion must (a production store refuses the PUT).
			u.Upload.Headers["x-amz-checksum-sha256"] = ""
			put(t, u, tc.sent)
			e.c.Code("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusUnprocessableEntity, tc.code, openapitest.Bearer(e.owner))
			if e.objectExists(t, darkroom.OriginalKey(u.Upload.ID)) {
				t.Errorf("%s: the refused object was kept", tc.name)
			}
			e.c.Code("GET", "/v1/media/"+u.Upload.ID, "", http.StatusNotFound, darkroom.CodeNotFound)
		}
	})
}

func TestUploadInputRefused(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, func(o *darkroom.Options) { o.QuotaBytes = 1 << 20; o.MaxUploadBytes = 512 << 10 })
		sum := strings.Repeat("a", 64)
		for _, tc := range []struct {
			body   string
			status int
			code   string
		}{
			{`{"content_type":"image/png","size":10,"sha256":"xyz"}`, 422, darkroom.CodeValidation},
			{`{"content_type":"image/png","size":0,"sha256":"` + sum + `"}`, 422, darkroom.CodeValidation},
			{`{"filename":"../etc/passwd","content_type":"image/png","size":10,"sha256":"` + sum + `"}`, 422, darkroom.CodeValidation},
			{`{"filename":"a\u0007b.png","content_type":"image/png","size":10,"sha256":"` + sum + `"}`, 422, darkroom.CodeValidation},
			{`{"content_type":"image/png","size":10,"sha256":"` + sum + `","visibility":"secret"}`, 422, darkroom.CodeValidation},
			{`{"content_type":"text/html","size":10,"sha256":"` + sum + `"}`, 415, darkroom.CodeUnsupportedType},
			{`{"content_type":"image/png","size":600000,"sha256":"` + sum + `"}`, 413, darkroom.CodeTooLarge},
			{`{"content_type":"image/png","size":10,"sha256":"` + sum + `","extra":1}`, 400, "malformed_json"},
		} {
			e.c.Code("POST", "/v1/uploads", tc.body, tc.status, tc.code, openapitest.Bearer(e.owner))
		}
		e.c.Code("POST", "/v1/uploads", `{}`, http.StatusUnauthorized, darkroom.CodeUnauthenticated)
		// Pending uploads count against the quota.
		for range 2 {
			e.c.Do("POST", "/v1/uploads", `{"content_type":"image/png","size":500000,"sha256":"`+sum+`"}`, http.StatusCreated, openapitest.Bearer(e.owner))
		}
		e.c.Code("POST", "/v1/uploads", `{"content_type":"image/png","size":100000,"sha256":"`+sum+`"}`, http.StatusRequestEntityTooLarge,
			darkroom.CodeQuotaExceeded, openapitest.Bearer(e.owner))
		e.c.Code("POST", "/v1/uploads/nonsense/complete", "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.owner))
		e.c.Code("POST", "/v1/uploads/nonsense/complete", "", http.StatusUnauthorized, darkroom.CodeUnauthenticated)
		e.c.Code("DELETE", "/v1/media/nonsense", "", http.StatusUnauthorized, darkroom.CodeUnauthenticated)
		e.c.Code("POST", "/v1/media/nonsense/links", `{"ttl":1}`, http.StatusUnauthorized, darkroom.CodeUnauthenticated)
		e.c.Code("GET", "/v1/media/nonsense/card", "", http.StatusUnauthorized, darkroom.CodeUnauthenticated, openapitest.Bearer("x"))
	})
}

func TestDirectUploads(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		for _, tc := range []struct {
			name string
			data []byte
			ct   string
			w, h int
		}{
			{"alpha png", darkroomtest.AlphaPNG(t, 30, 20), darkroom.TypePNG, 30, 20},
			{"webp", darkroomtest.WebP(t, 30, 20), darkroom.TypeWebP, 30, 20},
			{"animated gif", darkroomtest.AnimatedGIF(t, 30, 20), darkroom.TypeGIF, 30, 20},
			{"rotated jpeg", darkroomtest.RotatedJPEG(t, 30, 20, 6), darkroom.TypeJPEG, 20, 30},
			{"pdf", darkroomtest.PDF(), darkroom.TypePDF, 0, 0},
		} {
			var m mediaBody
			w := e.direct(t, tc.data, tc.ct, "?visibility=public&filename=a%20b.png", http.StatusCreated)
			if err := jsonUnmarshal(w.Body.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			if m.Media.ContentType != tc.ct || m.Media.Width != tc.w || m.Media.Height != tc.h || m.Media.SHA256 != hexSum(tc.data) ||
				m.Media.Size != int64(len(tc.data)) {
				t.Errorf("%s: %+v", tc.name, m.Media)
			}
			r := e.c.Do("GET", "/v1/media/"+m.Media.ID, "", http.StatusOK)
			if !bytes.Equal(r.Body.Bytes(), tc.data) || r.Header().Get("Cache-Control") != httpapi.CachePublic {
				t.Errorf("%s: read back %d bytes, %v", tc.name, r.Body.Len(), r.Header())
			}
			if tc.ct == darkroom.TypePDF {
				e.c.Code("GET", "/v1/media/"+m.Media.ID+"/thumb", "", http.StatusUnsupportedMediaType, darkroom.CodeUnsupportedType)
				continue
			}
			// WebP when accepted, else PNG (alpha-capable originals) or JPEG.
			v := e.c.Do("GET", "/v1/media/"+m.Media.ID+"/thumb", "", http.StatusOK, openapitest.Header("Accept", "image/avif,image/webp,*/*"))
			if v.Header().Get("Content-Type") != darkroom.TypeWebP || v.Header().Get("Vary") != "Accept" || bytes.Contains(v.Body.Bytes(), []byte("Exif")) {
				t.Errorf("%s: webp variant %v", tc.name, v.Header())
			}
			want := darkroom.TypeJPEG
			if tc.ct == darkroom.TypePNG || tc.ct == darkroom.TypeGIF {
				want = darkroom.TypePNG
			}
			v = e.c.Do("GET", "/v1/media/"+m.Media.ID+"/card", "", http.StatusOK, openapitest.Header("Accept", "image/webp;q=0, image/*"))
			if v.Header().Get("Content-Type") != want || bytes.Contains(v.Body.Bytes(), []byte("Exif")) {
				t.Errorf("%s: card %v", tc.name, v.Header())
			}
			e.c.Do("GET", "/v1/media/"+m.Media.ID+"/card", "", http.StatusNotModified, openapitest.Header("If-None-Match", v.Header().Get("ETag")))
			e.c.Code("GET", "/v1/media/"+m.Media.ID+"/huge", "", http.StatusNotFound, darkroom.CodeNotFound)
		}
		for _, tc := range []struct {
			name   string
			data   []byte
			ct     string
			query  string
			status int
			code   string
		}{
			{"zero bytes", nil, darkroom.TypePNG, "", 422, darkroom.CodeValidation},
			{"pdf as png", darkroomtest.PDF(), darkroom.TypePNG, "", 422, darkroom.CodeContentTypeMismatch},
			{"truncated", darkroomtest.Truncated(t), darkroom.TypePNG, "", 422, darkroom.CodeInvalidImage},
			{"bomb", darkroomtest.Bomb(), darkroom.TypePNG, "", 422, darkroom.CodeInvalidImage},
			{"path in filename", darkroomtest.PNG(t, 2, 2), darkroom.TypePNG, "?filename=a/b.png", 422, darkroom.CodeValidation},
			{"text", []byte("hello"), "text/plain", "", 415, darkroom.CodeUnsupportedType},
			{"over 256 KiB", bytes.Repeat(darkroomtest.PNG(t, 2, 2), 20000), darkroom.TypePNG, "", 413, darkroom.CodeTooLarge},
		} {
			w := e.direct(t, tc.data, tc.ct, tc.query, tc.status)
			if got := openapitest.ErrorCode(w.Body.Bytes()); got != tc.code {
				t.Errorf("%s: code %q, want %q", tc.name, got, tc.code)
			}
		}
		e.c.Code("POST", "/v1/media", "x", http.StatusUnauthorized, darkroom.CodeUnauthenticated, openapitest.Header("Content-Type", darkroom.TypePNG))
		var n int
		if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM media`).Scan(&n); err != nil || n != 5 {
			t.Fatalf("media rows %d, %v: a refused upload was recorded", n, err)
		}
	})
}

func TestQuotaOnDirectAndCompletion(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		png := darkroomtest.PNG(t, 40, 40)
		e := newEnv(t, engine, func(o *darkroom.Options) { o.QuotaBytes = int64(len(png))*2 + 10 })
		e.direct(t, png, darkroom.TypePNG, "", http.StatusCreated)
		u := e.startUpload(t, png, darkroom.TypePNG, darkroom.VisibilityPrivate)
		put(t, u, png)
		// A direct upload while the presigned one is pending passes the quota.
		e.c.Code("POST", "/v1/media", string(png), http.StatusRequestEntityTooLarge, darkroom.CodeQuotaExceeded,
			openapitest.Bearer(e.owner), openapitest.Header("Content-Type", darkroom.TypePNG))
		e.c.Do("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusOK, openapitest.Bearer(e.owner))
	})
}

// TestCompletionQuotaRace: two uploads declared while under quota, then
// completed; the second passes it and is refused, its object deleted.
func TestCompletionQuotaRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		png := darkroomtest.PNG(t, 40, 40)
		other := darkroomtest.PNG(t, 41, 40)
		e := newEnv(t, engine, func(o *darkroom.Options) { o.QuotaBytes = int64(len(png) + len(other)) })
		u1 := e.startUpload(t, png, darkroom.TypePNG, darkroom.VisibilityPrivate)
		u2 := e.startUpload(t, other, darkroom.TypePNG, darkroom.VisibilityPrivate)
		put(t, u1, png)
		put(t, u2, other)
		e.c.Do("POST", "/v1/uploads/"+u1.Upload.ID+"/complete", "", http.StatusOK, openapitest.Bearer(e.owner))
		// Usage is now one file; a direct upload takes the rest of the room.
		if _, err := e.db.Exec(t.Context(), `UPDATE usage SET bytes = bytes + 1`); err != nil {
			t.Fatal(err)
		}
		e.c.Code("POST", "/v1/uploads/"+u2.Upload.ID+"/complete", "", http.StatusRequestEntityTooLarge, darkroom.CodeQuotaExceeded, openapitest.Bearer(e.owner))
		if e.objectExists(t, darkroom.OriginalKey(u2.Upload.ID)) {
			t.Fatal("the refused object was kept")
		}
	})
}

// TestVariantMadeOnce: twenty concurrent first requests make one object
// and one row.
func TestVariantMadeOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		m := e.upload(t, darkroomtest.JPEG(t, 900, 600), darkroom.TypeJPEG, darkroom.VisibilityPublic)
		var wg sync.WaitGroup
		etags := make([]string, 20)
		for i := range etags {
			wg.Go(func() {
				w := e.c.Do("GET", "/v1/media/"+m.Media.ID+"/card", "", http.StatusOK, openapitest.Header("Accept", "image/webp"))
				etags[i] = w.Header().Get("ETag")
			})
		}
		wg.Wait()
		for _, tag := range etags {
			if tag != etags[0] || tag == "" {
				t.Fatalf("etags differ: %v", etags)
			}
		}
		if n := e.objects.variantPuts.Load(); n != 1 {
			t.Fatalf("%d variant objects written, want 1", n)
		}
		var n int
		if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM variants`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("variant rows %d, %v", n, err)
		}
	})
}

func TestStoreDown(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		png := darkroomtest.PNG(t, 10, 10)
		m := e.upload(t, png, darkroom.TypePNG, darkroom.VisibilityPublic)
		u := e.startUpload(t, png, darkroom.TypePNG, darkroom.VisibilityPublic)
		put(t, u, png)
		e.s3.Close()
		e.c.Code("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusServiceUnavailable, darkroom.CodeUnavailable, openapitest.Bearer(e.owner))
		e.c.Code("POST", "/v1/media", string(png), http.StatusServiceUnavailable, darkroom.CodeUnavailable,
			openapitest.Bearer(e.owner), openapitest.Header("Content-Type", darkroom.TypePNG))
		e.c.Code("GET", "/v1/media/"+m.Media.ID, "", http.StatusServiceUnavailable, darkroom.CodeUnavailable)
		e.c.Code("GET", "/v1/media/"+m.Media.ID+"/card", "", http.StatusServiceUnavailable, darkroom.CodeUnavailable)
		e.c.Code("DELETE", "/v1/media/"+m.Media.ID, "", http.StatusServiceUnavailable, darkroom.CodeUnavailable, openapitest.Bearer(e.owner))
		var n int
		if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM media`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("media rows %d, %v: something was recorded", n, err)
		}
	})
}

// TestCompletionRetriedAfterTheDatabase: the object is written, the
// database fails the completion (503), and the retry answers the media.
func TestCompletionRetriedAfterTheDatabase(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		png := darkroomtest.PNG(t, 10, 10)
		u := e.startUpload(t, png, darkroom.TypePNG, darkroom.VisibilityPrivate)
		put(t, u, png)
		e.store.down.Store(true)
		e.c.Code("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusServiceUnavailable, darkroom.CodeUnavailable, openapitest.Bearer(e.owner))
		e.store.down.Store(false)
		var m mediaBody
		e.c.JSON("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusOK, &m, openapitest.Bearer(e.owner))
		if m.Media.ID != u.Upload.ID {
			t.Fatalf("media %s, want %s", m.Media.ID, u.Upload.ID)
		}
	})
}

// TestSweepRemovesAbandonedUploads: an upload never completed goes, row
// and object, once 24 hours have passed; a younger one stays.
func TestSweepRemovesAbandonedUploads(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		png := darkroomtest.PNG(t, 10, 10)
		u := e.startUpload(t, png, darkroom.TypePNG, darkroom.VisibilityPrivate)
		put(t, u, png)
		if n, err := e.svc.Sweep(t.Context()); err != nil || n != 0 {
			t.Fatalf("young upload swept: %d, %v", n, err)
		}
		e.now = e.now.Add(darkroom.UploadRetention + time.Minute)
		if n, err := e.svc.Sweep(t.Context()); err != nil || n != 1 {
			t.Fatalf("swept %d, %v; want 1", n, err)
		}
		if e.objectExists(t, darkroom.OriginalKey(u.Upload.ID)) {
			t.Fatal("the abandoned object was kept")
		}
		e.c.Code("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusNotFound, darkroom.CodeNotFound, openapitest.Bearer(e.owner))
	})
}

// TestWaitingAnswers503 serves the handler of a database not yet open.
func TestWaitingAnswers503(t *testing.T) {
	c := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{Waiting: true}), coverage)
	for _, r := range [][2]string{{"POST", "/v1/uploads"}, {"POST", "/v1/uploads/x/complete"}, {"POST", "/v1/media"},
		{"GET", "/v1/media/x"}, {"DELETE", "/v1/media/x"}, {"POST", "/v1/media/x/links"}, {"GET", "/v1/media/x/card"}} {
		c.Code(r[0], r[1], "", http.StatusServiceUnavailable, "unavailable")
	}
	c.Do("GET", "/healthz", "", http.StatusOK)
	c.Do("GET", "/openapi.json", "", http.StatusOK)
	c.Do("GET", "/readyz", "", http.StatusOK)
}

// TestReadinessNamesDatabaseAndStore renders the kit's readiness with
// darkroom's two checks, the store's failing.
func TestReadinessNamesDatabaseAndStore(t *testing.T) {
	ready := service.NewReadiness(service.NamedDeps(map[string]string{"engine": "sqlite"}), slog.New(slog.DiscardHandler))
	ready.Add(service.Check{Name: service.CheckDatabase, Check: func(context.Context) error { return nil }})
	down := errors.New("connection refused")
	ready.Add(service.Check{Name: "store", Check: func(context.Context) error { return down }})
	c := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{Ready: ready.Probe}), coverage)
	w := c.Do("GET", "/readyz", "", http.StatusServiceUnavailable)
	if !strings.Contains(w.Body.String(), `"store":"unavailable"`) || !strings.Contains(w.Body.String(), `"database":"ok"`) {
		t.Fatalf("readyz: %s", w.Body)
	}
	down = nil
	c.Do("GET", "/readyz", "", http.StatusOK)
}

func TestOpenAPICoverage(t *testing.T) {
	// The other tests of this package run first (go test runs them in
	// source order; the engines' subtests finish before the next test).
	c := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{}), coverage)
	c.CheckCoverage()
}
