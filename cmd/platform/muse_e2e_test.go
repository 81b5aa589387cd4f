//go:build e2e

package main

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/muse/musetest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// museStack is identity, muse and the gateway as separate processes, and
// a team whose owner signed in through the gateway.
type museStack struct {
	identity, muse, gw *e2e.Proc
	museEnv            e2e.Env
	owner              e2e.Client // the owner's token, at the gateway
	team               string
}

func startMuseStack(t *testing.T, engine sqldb.Engine) *museStack {
	t.Helper()
	s := &museStack{}
	idEnv := identityEnv(t, engine)
	e2e.MustRun(t, idEnv, "identity", "migrate")
	s.identity = e2e.Start(t, idEnv, "identity", "serve")
	issuer := "http://localhost:" + portOf(s.identity.URL)
	s.museEnv = e2e.Env{
		"DATABASE_URL":      sqltest.URL(t, engine),
		"MUSE_VAULT_KEY":    e2e.MasterKey(),
		"MUSE_ENV":          "development",
		"MUSE_ECHO_ALIAS":   "echo",
		"IDENTITY_ISSUER":   issuer,
		"MUSE_IDENTITY_URL": s.identity.URL,
	}
	e2e.MustRun(t, s.museEnv, "muse", "migrate")
	s.startMuse(t)
	s.gw = e2e.Start(t, e2e.Env{"IDENTITY_URL": s.identity.URL, "IDENTITY_ISSUER": issuer, "MUSE_URL": s.muse.URL}, "gateway", "serve")

	register(t, s.gw.URL, "muse-owner@example.com", "muse owner password")
	s.owner = e2e.Client{Base: s.gw.URL, Token: login(t, s.gw.URL, "muse-owner@example.com", "muse owner password")}
	s.team = s.owner.Do(t, "POST", "/v1/accounts", map[string]string{"name": "Model Makers"}).Expect(t, http.StatusCreated).JSON(t)["id"].(string)
	return s
}

// startMuse starts muse (again) on its database and waits until it is
// ready, its key set loaded.
func (s *museStack) startMuse(t *testing.T) {
	t.Helper()
	s.muse = e2e.Start(t, s.museEnv, "muse", "serve")
	testutil.Eventually(t, 30*time.Second, "muse ready", func() bool { return ready(s.muse.URL) == http.StatusOK })
}

func ready(base string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// apiKey creates an API key of the team with models:invoke.
func (s *museStack) apiKey(t *testing.T) string {
	t.Helper()
	r := s.owner.Do(t, "POST", "/v1/accounts/"+s.team+"/api_keys", map[string]any{"name": "app", "scopes": []string{"models:invoke"}})
	return r.Expect(t, http.StatusCreated).JSON(t)["token"].(string)
}

// alias stores a credential for up and routes alias to it.
func (s *museStack) alias(t *testing.T, c e2e.Client, alias string, up *musetest.Upstream) {
	t.Helper()
	cred := c.Do(t, "POST", "/v1/accounts/"+s.team+"/provider_credentials", map[string]string{
		"provider": "openai", "name": alias, "base_url": up.URL + "/v1", "api_key": "sk-local-" + alias + "-1234"}).
		Expect(t, http.StatusCreated).JSON(t)["provider_credential"].(map[string]any)
	if cred["last_four"] != "1234" {
		t.Fatalf("credential %v", cred)
	}
	c.Do(t, "PUT", "/v1/accounts/"+s.team+"/models/"+alias, map[string]any{
		"targets": []map[string]string{{"credential_id": cred["id"].(string), "model": "local-model"}}}).Expect(t, http.StatusOK)
}

func ask(model, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// TestMuseThroughTheGatewayWithOpenAISDK points OpenAI's official Go
// client at the gateway's /v1, in front of the real muse binary, with an
// API key and with a signed-in token: answers and streams arrive whole,
// and muse's refusals (an unknown alias, a body that is not a chat
// request, an exhausted budget) read as the SDK's typed errors, streaming
// or not.
func TestMuseThroughTheGatewayWithOpenAISDK(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := startMuseStack(t, engine)
		up := musetest.NewOpenAI(t, "local")
		s.alias(t, s.owner, "gpt", up)
		ctx := t.Context()
		sdk := func(key string, opts ...option.RequestOption) openai.Client {
			return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(s.gw.URL + "/v1/"), option.WithAPIKey(key),
				option.WithOrganization(s.team), option.WithMaxRetries(0)}, opts...)...)
		}
		for _, who := range []struct{ name, key string }{{"APIKey", s.apiKey(t)}, {"Token", s.owner.Token}} {
			c := sdk(who.key)
			for _, tt := range []struct{ model, want string }{{"gpt", "Hello from local"}, {"echo", "Through the edge"}} {
				res, err := c.Chat.Completions.New(ctx, ask(tt.model, "Through the edge"))
				if err != nil || len(res.Choices) != 1 || res.Choices[0].Message.Content != tt.want || res.Usage.TotalTokens == 0 {
					t.Fatalf("%s %s: %+v, %v", who.name, tt.model, res, err)
				}
				p := ask(tt.model, "Through the edge")
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				stream := c.Chat.Completions.NewStreaming(ctx, p)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != tt.want || acc.Usage.TotalTokens == 0 {
					t.Fatalf("%s %s stream: %+v, %v", who.name, tt.model, acc.ChatCompletion, err)
				}
			}
			page, err := c.Models.List(ctx)
			if err != nil || len(page.Data) != 2 {
				t.Fatalf("%s models: %+v, %v", who.name, page, err)
			}
		}

		c := sdk(s.apiKey(t))
		apiError := func(t *testing.T, what string, err error, status int, code string) {
			t.Helper()
			var e *openai.Error
			if !errors.As(err, &e) || e.StatusCode != status || e.Code != code || e.Message == "" {
				t.Errorf("%s: %v, want %d %s", what, err, status, code)
			}
		}
		streamErr := func(p openai.ChatCompletionNewParams, opts ...option.RequestOption) error {
			stream := c.Chat.Completions.NewStreaming(ctx, p, opts...)
			for stream.Next() {
				t.Errorf("a refused stream yielded a chunk: %+v", stream.Current())
			}
			return stream.Err()
		}
		for _, tt := range []struct {
			name   string
			params openai.ChatCompletionNewParams
			opts   []option.RequestOption
			status int
			code   string
		}{
			{"UnknownAlias", ask("nope", "hi"), nil, http.StatusNotFound, "model_not_found"},
			{"NotAChatRequest", ask("gpt", "hi"), []option.RequestOption{option.WithJSONSet("messages", "not a list")}, http.StatusBadRequest, "invalid_request"},
			{"NoMessages", ask("gpt", "hi"), []option.RequestOption{option.WithJSONSet("messages", []any{})}, http.StatusBadRequest, "invalid_request"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := c.Chat.Completions.New(ctx, tt.params, tt.opts...)
				apiError(t, "completion", err, tt.status, tt.code)
				apiError(t, "stream", streamErr(tt.params, tt.opts...), tt.status, tt.code)
			})
		}

		// The budget: the month already used more than this, so the next
		// request is refused, and the SDK reads the 429 as OpenAI's quota
		// error.
		s.owner.Do(t, "PUT", "/v1/accounts/"+s.team+"/budget", map[string]int{"monthly_tokens": 10}).Expect(t, http.StatusOK)
		_, err := c.Chat.Completions.New(ctx, ask("gpt", "hi"))
		apiError(t, "over budget", err, http.StatusTooManyRequests, "budget_exhausted")
		var e *openai.Error
		if errors.As(err, &e) && e.Type != "insufficient_quota" {
			t.Errorf("over budget: type %q, want insufficient_quota", e.Type)
		}
		apiError(t, "over budget, streaming", streamErr(ask("echo", "hi")), http.StatusTooManyRequests, "budget_exhausted")
		calls := up.Calls()
		if calls != 4 {
			t.Errorf("the upstream saw %d calls, want the 4 answered ones (refusals never reach it)", calls)
		}
	})
}

// TestMuseKilledMidStreamLosesOnlyTheInFlight runs completions to the end
// against the real binary, holds more streams open mid-answer, and kills
// muse with SIGKILL: every completed request's usage row and outbox row
// is there, and the streams in flight are the only ones missing (muse
// meters a completion when it ends). Started again on the same database,
// muse answers and meters as before.
func TestMuseKilledMidStreamLosesOnlyTheInFlight(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := startMuseStack(t, engine)
		fast := musetest.NewOpenAI(t, "fast")
		held := musetest.NewOpenAI(t, "held")
		held.Words = []string{"one", " two", " three", " four"}
		held.Pause = make(chan struct{}) // every stream waits after its second word
		t.Cleanup(func() { close(held.Pause) })
		s.alias(t, s.owner, "fast", fast)
		s.alias(t, s.owner, "held", held)
		key := s.apiKey(t)
		// Straight to muse: the gateway is not what is being killed.
		c := openai.NewClient(option.WithBaseURL(s.muse.URL+"/v1/"), option.WithAPIKey(key), option.WithOrganization(s.team),
			option.WithMaxRetries(0))
		ctx := t.Context()

		const completed, inFlight = 12, 6
		var wg sync.WaitGroup
		for i := range completed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				model := []string{"fast", "echo"}[i%2]
				if i%3 == 0 {
					if _, err := c.Chat.Completions.New(ctx, ask(model, "finish me")); err != nil {
						t.Errorf("completion %d: %v", i, err)
					}
					return
				}
				stream := c.Chat.Completions.NewStreaming(ctx, ask(model, "finish me"))
				for stream.Next() {
				}
				if err := stream.Err(); err != nil {
					t.Errorf("stream %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		db := openDB(t, s.museEnv["DATABASE_URL"])
		// A completion is metered when it ends, one commit after its last
		// byte: the completed ones are all written within moments.
		testutil.Eventually(t, 10*time.Second, "the completed requests metered", func() bool {
			return count(t, db, `SELECT count(*) FROM usage`) == completed
		})

		// Streams held mid-answer: each has its first chunks when muse dies.
		streaming := make(chan struct{}, inFlight)
		ended := make(chan error, inFlight)
		for range inFlight {
			go func() {
				req, _ := http.NewRequestWithContext(ctx, "POST", s.muse.URL+"/v1/chat/completions",
					strings.NewReader(`{"model":"held","stream":true,"messages":[{"role":"user","content":"hold me"}]}`))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("OpenAI-Organization", s.team)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					ended <- err
					return
				}
				defer res.Body.Close()
				sc := bufio.NewScanner(res.Body)
				for seen := 0; sc.Scan(); {
					if strings.HasPrefix(sc.Text(), "data: ") {
						if seen++; seen == 2 {
							streaming <- struct{}{}
						}
					}
				}
				ended <- sc.Err()
			}()
		}
		for range inFlight {
			select {
			case <-streaming:
			case err := <-ended:
				t.Fatalf("a held stream ended before muse was killed: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("the held streams never started")
			}
		}
		s.muse.Signal(syscall.SIGKILL)
		if !s.muse.Wait(10 * time.Second) {
			t.Fatal("muse survived SIGKILL")
		}
		for range inFlight {
			select {
			case <-ended: // the connection dropped: the client sees the stream cut short
			case <-time.After(10 * time.Second):
				t.Fatal("a held stream's client never saw muse die")
			}
		}

		rows, outbox := count(t, db, `SELECT count(*) FROM usage`), count(t, db, `SELECT count(*) FROM outbox`)
		heldRows := count(t, db, `SELECT count(*) FROM usage WHERE alias = 'held'`)
		if rows != completed || outbox != completed || heldRows != 0 {
			t.Fatalf("after SIGKILL: %d usage rows, %d outbox rows, %d of the held streams; want %d, %d, 0", rows, outbox, heldRows, completed, completed)
		}
		var sum, month int64
		if err := db.QueryRow(context.Background(), `SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM usage`).Scan(&sum); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(context.Background(), `SELECT CAST(sum(tokens) AS bigint) FROM usage_months`).Scan(&month); err != nil {
			t.Fatal(err)
		}
		if sum != month || sum == 0 {
			t.Fatalf("the month's total %d, the rows' sum %d", month, sum)
		}

		// Started again on the same database, muse answers and meters.
		s.startMuse(t)
		c = openai.NewClient(option.WithBaseURL(s.muse.URL+"/v1/"), option.WithAPIKey(key), option.WithOrganization(s.team),
			option.WithMaxRetries(0))
		if _, err := c.Chat.Completions.New(ctx, ask("fast", "again")); err != nil {
			t.Fatalf("after the restart: %v", err)
		}
		testutil.Eventually(t, 10*time.Second, "the new completion metered", func() bool {
			return count(t, db, `SELECT count(*) FROM usage`) == completed+1 && count(t, db, `SELECT count(*) FROM outbox`) == completed+1
		})
	})
}

func openDB(t *testing.T, rawURL string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), rawURL)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sqldb.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
