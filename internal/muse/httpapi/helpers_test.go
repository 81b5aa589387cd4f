package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/muse/httpapi"
	"github.com/platformco/platform/internal/muse/identityclient"
	"github.com/platformco/platform/internal/muse/providers"
	"github.com/platformco/platform/internal/muse/sqlstore"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

const (
	account   = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	otherAcct = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
	keyInvoke = "plat_invokeinvokeinvokeinvokeinvokeinvokeinvokei"
	keyRead   = "plat_readreadreadreadreadreadreadreadreadreadread"
)

var vaultKey = []byte("0123456789abcdef0123456789abcdef")

// identityServer is identity as muse meets it: the key set (tokenstest),
// GET /v1/accounts/{id} answering each caller's role, and GET
// /v1/operator/me for staff, in identity's documented shapes.
type identityServer struct {
	keys  *tokenstest.KeyServer
	mu    sync.Mutex
	dir   map[string]member // bearer → who
	staff map[string]bool
	down  bool
	// roleReads counts the requests for a role (GET /v1/accounts/{id}).
	roleReads int
}

type member struct {
	userID string
	roles  map[string]string
	scopes []string
}

func newIdentity(t testing.TB) *identityServer {
	s := &identityServer{staff: map[string]bool{}, dir: map[string]member{
		keyInvoke: {roles: map[string]string{account: muse.RoleAPIKey}, scopes: []string{"account:read", muse.ScopeModelsInvoke}},
		keyRead:   {roles: map[string]string{account: muse.RoleAPIKey}, scopes: []string{"account:read"}},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/accounts/{id}", s.account)
	mux.HandleFunc("GET /v1/operator/me", s.operatorMe)
	s.keys = tokenstest.NewKeyServer(t, mux)
	return s
}

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

func (s *identityServer) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roleReads
}

func (s *identityServer) who(r *http.Request) (member, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/v1/operator/me" {
		s.roleReads++
	}
	m, ok := s.dir[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	return m, ok, s.down
}

func (s *identityServer) account(w http.ResponseWriter, r *http.Request) {
	m, ok, down := s.who(r)
	switch {
	case down:
		w.WriteHeader(http.StatusBadGateway)
		return
	case !ok:
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := r.PathValue("id")
	role, isMember := m.roles[id]
	if !isMember {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	body := map[string]any{"id": id, "name": "Team", "slug": "team", "personal": false, "role": role}
	if role == muse.RoleAPIKey {
		body["scopes"] = m.scopes
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func (s *identityServer) operatorMe(w http.ResponseWriter, r *http.Request) {
	m, ok, down := s.who(r)
	switch {
	case down:
		w.WriteHeader(http.StatusBadGateway)
		return
	case !ok || m.userID == "":
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	staff := s.staff[m.userID]
	s.mu.Unlock()
	if !staff {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"user": map[string]any{"id": m.userID, "email": "staff@example.com", "staff": true}})
}

type env struct {
	identity *identityServer
	db       *sqldb.DB
	svc      *muse.Service
	c        *openapitest.Client
	h        http.Handler
	owner    string
	member   string
	stranger string
	staff    string
}

// coverage is what every handler test saw, for TestOpenAPICoverage.
var coverage = &openapitest.Coverage{}

type envOption func(*muse.Options, *httpapi.Deps)

func newEnv(t *testing.T, engine sqldb.Engine, opts ...envOption) *env {
	t.Helper()
	e := &env{identity: newIdentity(t)}
	e.db = sqltest.Open(t, engine, sqlstore.Migrations)
	logger := slog.New(slog.DiscardHandler)
	ic := identityclient.New(identityclient.Options{Issuer: e.identity.keys.Issuer, BaseURL: e.identity.keys.URL, Logger: logger})
	go ic.Run(t.Context())
	for deadline := time.Now().Add(10 * time.Second); !ic.KeysUsable(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the key set never loaded")
		}
	}
	vault, err := seal.New(vaultKey)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{}
	o := muse.Options{EchoAlias: "echo", UpstreamTimeout: 2 * time.Second, Logger: logger, Providers: map[string]muse.Provider{
		muse.ProviderOpenAI: &providers.OpenAI{Client: client}, muse.ProviderAnthropic: &providers.Anthropic{Client: client},
		muse.ProviderEcho: providers.Echo{}}}
	d := httpapi.Deps{Logger: logger}
	for _, opt := range opts {
		opt(&o, &d)
	}
	e.svc = muse.NewService(sqlstore.New(e.db), ic, vault, o)
	d.Service = e.svc
	e.h = httpapi.NewServer(d)
	e.c = openapitest.NewClient(t, httpapi.OpenAPI(), e.h, coverage)
	e.owner = e.identity.user(t, map[string]string{account: muse.RoleOwner})
	e.member = e.identity.user(t, map[string]string{account: muse.RoleMember})
	e.stranger = e.identity.user(t, map[string]string{otherAcct: muse.RoleOwner})
	e.staff = e.identity.user(t, map[string]string{})
	e.identity.mu.Lock()
	e.identity.staff[e.identity.dir[e.staff].userID] = true
	e.identity.mu.Unlock()
	return e
}

// org names the account as OpenAI's SDKs do.
func org(id string) openapitest.Option { return openapitest.Header(muse.OrganizationHeader, id) }

type credentialBody struct {
	Credential struct {
		ID       string `json:"id"`
		LastFour string `json:"last_four"`
	} `json:"provider_credential"`
}

// credential stores a key for provider at base and returns its id.
func (e *env) credential(t *testing.T, provider, name, base string) string {
	t.Helper()
	var c credentialBody
	body, _ := json.Marshal(map[string]string{"provider": provider, "name": name, "base_url": base, "api_key": "sk-test-" + name + "-9876"})
	e.c.JSON("POST", "/v1/accounts/"+account+"/provider_credentials", string(body), http.StatusCreated, &c, openapitest.Bearer(e.owner))
	return c.Credential.ID
}

type target struct {
	CredentialID string `json:"credential_id"`
	Model        string `json:"model"`
	Weight       int    `json:"weight,omitempty"`
}

func (e *env) alias(t *testing.T, name string, targets ...target) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"targets": targets})
	e.c.Do("PUT", "/v1/accounts/"+account+"/models/"+name, string(body), http.StatusOK, openapitest.Bearer(e.owner))
}

type usageRow struct {
	Caller, Alias, Provider, Model, Status string
	Prompt, Completion                     int64
	Estimated                              bool
}

func (e *env) usage(t *testing.T) []usageRow {
	t.Helper()
	rows, err := e.db.Query(t.Context(), `SELECT caller, alias, provider, upstream_model, status, prompt_tokens, completion_tokens, estimated
		FROM usage ORDER BY created_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []usageRow
	for rows.Next() {
		var u usageRow
		if err := rows.Scan(&u.Caller, &u.Alias, &u.Provider, &u.Model, &u.Status, &u.Prompt, &u.Completion, &u.Estimated); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
