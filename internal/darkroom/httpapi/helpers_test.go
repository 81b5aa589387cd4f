package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/devs3"
	"github.com/platformco/platform/internal/darkroom/httpapi"
	"github.com/platformco/platform/internal/darkroom/keyset"
	"github.com/platformco/platform/internal/darkroom/s3store"
	"github.com/platformco/platform/internal/darkroom/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

// coverage is what every handler test saw, for TestOpenAPICoverage.
var coverage = &openapitest.Coverage{}

// counting wraps the object store: it counts variant PUTs and can play a
// store that is down.
type counting struct {
	darkroom.Objects
	variantPuts atomic.Int64
}

func (c *counting) Put(ctx context.Context, key string, r io.Reader, size int64, ct string) error {
	if strings.HasPrefix(key, "variants/") {
		c.variantPuts.Add(1)
	}
	return c.Objects.Put(ctx, key, r, size, ct)
}

// flaky fails CompleteUpload while down, as a database that went away
// after the object was written.
type flaky struct {
	darkroom.Store
	down atomic.Bool
}

func (f *flaky) CompleteUpload(ctx context.Context, m darkroom.Media, quota int64) (darkroom.Media, error) {
	if f.down.Load() {
		return darkroom.Media{}, errs.New(darkroom.CodeUnavailable, "the database is unavailable")
	}
	return f.Store.CompleteUpload(ctx, m, quota)
}

type env struct {
	keys    *tokenstest.KeyServer
	s3      *httptest.Server
	objects *counting
	store   *flaky
	db      *sqldb.DB
	c       *openapitest.Client
	h       http.Handler
	svc     *darkroom.Service
	opts    darkroom.Options
	owner   string // a user's token
	ownerID string
	other   string
	now     time.Time
}

type option func(*darkroom.Options)

func newEnv(t *testing.T, engine sqldb.Engine, opts ...option) *env {
	t.Helper()
	e := &env{keys: tokenstest.NewKeyServer(t, http.NewServeMux()), now: time.Now()}
	h, err := devs3.New(devs3.Development, t.TempDir(), "media")
	if err != nil {
		t.Fatal(err)
	}
	e.s3 = httptest.NewServer(h)
	t.Cleanup(e.s3.Close)
	st, err := s3store.New(s3store.Options{Endpoint: e.s3.URL, Region: s3store.RegionAuto, Bucket: "media", AccessKeyID: "dev", SecretAccessKey: "devdevdev"})
	if err != nil {
		t.Fatal(err)
	}
	e.objects = &counting{Objects: st}
	e.db = sqltest.Open(t, engine, sqlstore.Migrations)
	e.store = &flaky{Store: sqlstore.New(e.db)}
	logger := slog.New(slog.DiscardHandler)
	v := keyset.New(keyset.Options{Issuer: e.keys.Issuer, Logger: logger})
	go v.Run(t.Context())
	for deadline := time.Now().Add(10 * time.Second); !v.Usable(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the key set never loaded")
		}
	}
	o := darkroom.Options{Store: e.store, Objects: e.objects, Identity: v, URLKey: bytes.Repeat([]byte{7}, 32),
		MaxDirectBytes: 256 << 10, Logger: logger, Now: func() time.Time { return e.now }}
	for _, f := range opts {
		f(&o)
	}
	e.opts = o
	e.svc = darkroom.NewService(o)
	e.h = httpapi.NewServer(httpapi.Deps{Service: e.svc, Logger: logger})
	e.c = openapitest.NewClient(t, httpapi.OpenAPI(), e.h, coverage)
	e.ownerID = ids.New()
	e.owner = e.keys.Token(t, "k1", e.keys.Claims(e.ownerID, time.Hour))
	e.other = e.keys.Token(t, "k1", e.keys.Claims(ids.New(), time.Hour))
	return e
}

type mediaBody struct {
	Media struct {
		ID          string `json:"id"`
		OwnerID     string `json:"owner_id"`
		ContentType string `json:"content_type"`
		Size        int64  `json:"size"`
		SHA256      string `json:"sha256"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
		Visibility  string `json:"visibility"`
	} `json:"media"`
}

type uploadBody struct {
	Upload struct {
		ID      string            `json:"id"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	} `json:"upload"`
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// startUpload declares data as contentType and returns the upload.
func (e *env) startUpload(t *testing.T, data []byte, contentType, visibility string) uploadBody {
	t.Helper()
	var u uploadBody
	body := `{"filename":"f","content_type":"` + contentType + `","size":` + strconv.Itoa(len(data)) + `,"sha256":"` + hexSum(data) +
		`","visibility":"` + visibility + `"}`
	e.c.JSON("POST", "/v1/uploads", body, http.StatusCreated, &u, openapitest.Bearer(e.owner))
	return u
}

// put sends data to the presigned URL with its headers.
func put(t *testing.T, u uploadBody, data []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, u.Upload.URL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range u.Upload.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("presigned PUT = %d", res.StatusCode)
	}
}

// upload uploads data presigned and completes it.
func (e *env) upload(t *testing.T, data []byte, contentType, visibility string) mediaBody {
	t.Helper()
	u := e.startUpload(t, data, contentType, visibility)
	put(t, u, data)
	var m mediaBody
	e.c.JSON("POST", "/v1/uploads/"+u.Upload.ID+"/complete", "", http.StatusOK, &m, openapitest.Bearer(e.owner))
	return m
}

// direct uploads data directly.
func (e *env) direct(t *testing.T, data []byte, contentType, query string, status int) *httptest.ResponseRecorder {
	t.Helper()
	return e.raw(t, "POST", "/v1/media"+query, data, status, openapitest.Bearer(e.owner), openapitest.Header("Content-Type", contentType))
}

// raw sends a non-JSON body through the client's validation.
func (e *env) raw(t *testing.T, method, path string, data []byte, status int, opts ...openapitest.Option) *httptest.ResponseRecorder {
	t.Helper()
	return e.c.Do(method, path, string(data), status, opts...)
}

// objectExists asks the store whether key holds an object.
func (e *env) objectExists(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.objects.Stat(t.Context(), key)
	if err != nil && !errors.Is(err, darkroom.ErrObjectAbsent) {
		t.Fatal(err)
	}
	return err == nil
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
