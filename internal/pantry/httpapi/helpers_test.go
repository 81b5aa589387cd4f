package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/pantry/darkroomclient"
	"github.com/platformco/platform/internal/pantry/httpapi"
	"github.com/platformco/platform/internal/pantry/identityclient"
	"github.com/platformco/platform/internal/pantry/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

const (
	account   = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	otherAcct = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
	keyWrite  = "plat_writewritewritewritewritewritewritewritewrit"
	keyRead   = "plat_readreadreadreadreadreadreadreadreadreadread"
)

// identityServer is identity as pantry meets it: the key set (tokenstest)
// and GET /v1/accounts/{id} answering each caller's role in identity's
// documented shape, from a directory the test fills.
type identityServer struct {
	keys *tokenstest.KeyServer
	mu   sync.Mutex
	dir  map[string]member // bearer → who
	down bool
}

type member struct {
	userID string
	roles  map[string]string
	scopes []string
}

func newIdentity(t testing.TB) *identityServer {
	s := &identityServer{dir: map[string]member{
		keyWrite: {roles: map[string]string{account: pantry.RoleAPIKey}, scopes: []string{"account:read", pantry.ScopeProjectsWrite}},
		keyRead:  {roles: map[string]string{account: pantry.RoleAPIKey}, scopes: []string{"account:read"}},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/accounts/{id}", s.account)
	s.keys = tokenstest.NewKeyServer(t, mux)
	return s
}

// user mints a token for a new user with roles by account.
func (s *identityServer) user(t testing.TB, roles map[string]string) string {
	id := ids.New()
	tok := s.keys.Token(t, "k1", s.keys.Claims(id, time.Hour))
	s.mu.Lock()
	s.dir[tok] = member{userID: id, roles: roles}
	s.mu.Unlock()
	return tok
}

func (s *identityServer) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *identityServer) account(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m, ok := s.dir[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	down := s.down
	s.mu.Unlock()
	switch {
	case down:
		w.WriteHeader(http.StatusBadGateway)
		return
	case !ok:
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := r.PathValue("id")
	role, member := m.roles[id]
	if !member {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	body := map[string]any{"id": id, "name": "Team", "slug": "team", "personal": false, "role": role}
	if role == pantry.RoleAPIKey {
		body["scopes"] = m.scopes
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// darkroomServer answers darkroom.md section 3's GET/HEAD /v1/media/{id}
// anonymously: 200 with the media's headers for public media, 404 for
// private or missing media alike.
type darkroomServer struct {
	*httptest.Server
	public, private string
}

func newDarkroom(t testing.TB) *darkroomServer {
	d := &darkroomServer{public: ids.New(), private: ids.New()}
	mux := http.NewServeMux()
	media := func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != d.public || r.Header.Get("Authorization") != "" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"about:blank","status":404,"title":"Not Found","detail":"no such media","code":"not_found"}`)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("ETag", `"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("Content-Length", "4")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("\x89PNG"))
		}
	}
	mux.HandleFunc("GET /v1/media/{id}", media)
	d.Server = httptest.NewServer(mux)
	t.Cleanup(d.Close)
	return d
}

type env struct {
	identity *identityServer
	darkroom *darkroomServer
	db       *sqldb.DB
	c        *openapitest.Client
	h        http.Handler
	owner    string
	admin    string
	member   string
	stranger string
}

// coverage is what every handler test saw, for TestOpenAPICoverage.
var coverage = &openapitest.Coverage{}

func newEnv(t *testing.T, engine sqldb.Engine) *env {
	t.Helper()
	e := &env{identity: newIdentity(t), darkroom: newDarkroom(t)}
	e.db = sqltest.Open(t, engine, sqlstore.Migrations)
	logger := slog.New(slog.DiscardHandler)
	ic := identityclient.New(identityclient.Options{Issuer: e.identity.keys.Issuer, BaseURL: e.identity.keys.URL, Logger: logger})
	go ic.Run(t.Context())
	for deadline := time.Now().Add(10 * time.Second); !ic.KeysUsable(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the key set never loaded")
		}
	}
	dc := darkroomclient.New(darkroomclient.Options{BaseURL: e.darkroom.URL, Timeout: time.Second, Logger: logger})
	svc := pantry.NewService(sqlstore.New(e.db), ic, dc)
	e.h = httpapi.NewServer(httpapi.Deps{Service: svc, Logger: logger})
	e.c = openapitest.NewClient(t, httpapi.OpenAPI(), e.h, coverage)
	e.owner = e.identity.user(t, map[string]string{account: pantry.RoleOwner})
	e.admin = e.identity.user(t, map[string]string{account: pantry.RoleAdmin})
	e.member = e.identity.user(t, map[string]string{account: pantry.RoleMember})
	e.stranger = e.identity.user(t, map[string]string{otherAcct: pantry.RoleOwner})
	return e
}

type projectBody struct {
	Project struct {
		ID              string   `json:"id"`
		Slug            string   `json:"slug"`
		Name            string   `json:"name"`
		Description     string   `json:"description"`
		DescriptionHTML string   `json:"description_html"`
		Tags            []string `json:"tags"`
		Uses            []string `json:"uses"`
		CreatedBy       *string  `json:"created_by"`
		LogoMediaID     *string  `json:"logo_media_id"`
		Stars           int64    `json:"stars"`
	} `json:"project"`
}

func (e *env) publish(t *testing.T, body string) projectBody {
	t.Helper()
	var p projectBody
	e.c.JSON("POST", "/v1/accounts/"+account+"/projects", body, http.StatusCreated, &p, openapitest.Bearer(e.owner))
	return p
}
