package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/muse/httpapi"
	"github.com/platformco/platform/internal/muse/musetest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestRoutesMatchTheDocument(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckRoutes(t, httpapi.OpenAPI(), src, 15)
}

func TestVaultAliasesBudgets(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		base := "/v1/accounts/" + account
		var c credentialBody
		e.c.JSON("POST", base+"/provider_credentials", `{"provider":"openai","name":"main","api_key":"sk-live-abcdefgh1234"}`,
			http.StatusCreated, &c, openapitest.Bearer(e.owner))
		if c.Credential.LastFour != "1234" {
			t.Fatalf("last four = %q", c.Credential.LastFour)
		}
		// The key never leaves the vault, nor is it stored in the clear.
		res := e.c.Do("GET", base+"/provider_credentials", "", http.StatusOK, openapitest.Bearer(e.member))
		if strings.Contains(res.Body.String(), "abcdefgh") || !strings.Contains(res.Body.String(), `"last_four":"1234"`) {
			t.Fatalf("list shows %s", res.Body)
		}
		var n int
		if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM provider_credentials WHERE CAST(sealed_key AS TEXT) LIKE '%abcdefgh%'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("a key stored in the clear: %d, %v", n, err)
		}
		e.c.Code("POST", base+"/provider_credentials", `{"provider":"openai","name":"main","api_key":"sk-other-key-0000"}`,
			http.StatusConflict, "name_taken", openapitest.Bearer(e.owner))
		e.c.Code("POST", base+"/provider_credentials", `{"provider":"bard","name":"x","api_key":"short"}`,
			http.StatusUnprocessableEntity, "validation_failed", openapitest.Bearer(e.owner))
		e.c.Code("POST", base+"/provider_credentials", `{"provider":"openai","name":"y","api_key":"sk-member-key-1"}`,
			http.StatusForbidden, "forbidden", openapitest.Bearer(e.member))
		e.c.Code("POST", base+"/provider_credentials", `{"provider":"openai","name":"y","api_key":"sk-member-key-1"}`,
			http.StatusForbidden, "forbidden", openapitest.Bearer(keyInvoke))
		e.c.Code("GET", base+"/provider_credentials", "", http.StatusForbidden, "forbidden", openapitest.Bearer(e.stranger))
		e.c.Code("GET", base+"/provider_credentials", "", http.StatusUnauthorized, "unauthenticated")
		e.c.Code("POST", base+"/provider_credentials", `{"provider":"openai",`, http.StatusBadRequest, "malformed_json", openapitest.Bearer(e.owner))

		// Staff's platform-wide credentials.
		var p credentialBody
		e.c.JSON("POST", "/v1/operator/provider_credentials", `{"provider":"anthropic","name":"house","api_key":"sk-ant-house-5678"}`,
			http.StatusCreated, &p, openapitest.Bearer(e.staff))
		e.c.Code("GET", "/v1/operator/provider_credentials", "", http.StatusForbidden, "forbidden", openapitest.Bearer(e.owner))
		e.c.Do("GET", "/v1/operator/provider_credentials", "", http.StatusOK, openapitest.Bearer(e.staff))

		// Aliases over both, in order.
		e.c.Code("PUT", base+"/models/fast", `{"targets":[]}`, http.StatusUnprocessableEntity, "validation_failed", openapitest.Bearer(e.owner))
		e.c.Code("PUT", base+"/models/fast", `{"targets":[{"credential_id":"`+otherAcct+`","model":"m"}]}`,
			http.StatusUnprocessableEntity, "validation_failed", openapitest.Bearer(e.owner))
		e.alias(t, "fast", target{c.Credential.ID, "gpt-4o-mini", 2}, target{p.Credential.ID, "claude-haiku", 1})
		var al struct {
			Model struct {
				Targets []target `json:"targets"`
			} `json:"model"`
		}
		e.c.JSON("GET", base+"/models/fast", "", http.StatusOK, &al, openapitest.Bearer(e.member))
		if len(al.Model.Targets) != 2 || al.Model.Targets[1].Model != "claude-haiku" || al.Model.Targets[0].Weight != 2 {
			t.Fatalf("alias %+v", al.Model)
		}
		e.c.Do("GET", base+"/models", "", http.StatusOK, openapitest.Bearer(e.member))
		e.c.Code("PUT", base+"/models/fast", `{"targets":[{"credential_id":"`+c.Credential.ID+`","model":"m"}]}`,
			http.StatusForbidden, "forbidden", openapitest.Bearer(e.member))
		e.c.Code("DELETE", base+"/provider_credentials/"+c.Credential.ID, "", http.StatusConflict, "credential_in_use", openapitest.Bearer(e.owner))
		e.c.Code("DELETE", "/v1/operator/provider_credentials/"+p.Credential.ID, "", http.StatusConflict, "credential_in_use", openapitest.Bearer(e.staff))
		e.c.Do("DELETE", base+"/models/fast", "", http.StatusNoContent, openapitest.Bearer(e.owner))
		e.c.Code("GET", base+"/models/fast", "", http.StatusNotFound, "not_found", openapitest.Bearer(e.owner))
		e.c.Code("DELETE", base+"/models/fast", "", http.StatusNotFound, "not_found", openapitest.Bearer(e.owner))
		e.c.Do("DELETE", base+"/provider_credentials/"+c.Credential.ID, "", http.StatusNoContent, openapitest.Bearer(e.owner))
		e.c.Code("DELETE", base+"/provider_credentials/"+c.Credential.ID, "", http.StatusNotFound, "not_found", openapitest.Bearer(e.owner))
		e.c.Do("DELETE", "/v1/operator/provider_credentials/"+p.Credential.ID, "", http.StatusNoContent, openapitest.Bearer(e.staff))

		// Budgets.
		var b struct {
			Budget struct {
				Monthly *int64 `json:"monthly_tokens"`
				Used    int64  `json:"used_tokens"`
			} `json:"budget"`
		}
		e.c.JSON("GET", base+"/budget", "", http.StatusOK, &b, openapitest.Bearer(e.member))
		if b.Budget.Monthly != nil {
			t.Fatalf("budget before any: %+v", b)
		}
		e.c.JSON("PUT", base+"/budget", `{"monthly_tokens":5000}`, http.StatusOK, &b, openapitest.Bearer(e.owner))
		if b.Budget.Monthly == nil || *b.Budget.Monthly != 5000 {
			t.Fatalf("budget %+v", b)
		}
		e.c.Code("PUT", base+"/budget", `{"monthly_tokens":-1}`, http.StatusUnprocessableEntity, "validation_failed", openapitest.Bearer(e.owner))
		e.c.Code("PUT", base+"/budget", `{"monthly_tokens":1}`, http.StatusForbidden, "forbidden", openapitest.Bearer(e.member))
		e.c.Do("GET", base+"/usage/models?from=2026-01-01&to=2026-02-01", "", http.StatusOK, openapitest.Bearer(e.member))
		e.c.Code("GET", base+"/usage/models?from=yesterday", "", http.StatusUnprocessableEntity, "validation_failed", openapitest.Bearer(e.member))
	})
}

type completionBody struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

const ask = `{"model":"%s","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello"}],"temperature":0.5,"x_vendor":{"keep":true}%s}`

func chatBody(alias, extra string) string {
	return strings.Replace(strings.Replace(ask, "%s", alias, 1), "%s", extra, 1)
}

// sse reads a stream's data lines until [DONE] or the end.
func sse(t *testing.T, body io.Reader) (chunks []string, done bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return chunks, true
		}
		chunks = append(chunks, line)
	}
	return chunks, false
}

func streamText(t *testing.T, chunks []string) string {
	t.Helper()
	var b strings.Builder
	for _, c := range chunks {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(c), &ch); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	return b.String()
}

func TestChatAcrossProviders(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		oai := musetest.NewOpenAI(t, "openai")
		ant := musetest.NewAnthropic(t, "anthropic")
		e.alias(t, "gpt", target{CredentialID: e.credential(t, "openai", "oai", oai.URL+"/v1"), Model: "gpt-4o-mini"})
		e.alias(t, "claude", target{CredentialID: e.credential(t, "anthropic", "ant", ant.URL), Model: "claude-haiku-4-5"})
		user := openapitest.Bearer(e.member)

		// openai: forwarded as sent, only model rewritten; the answer as it came.
		body := chatBody("gpt", "")
		res := e.c.Do("POST", "/v1/chat/completions", body, http.StatusOK, user, org(account))
		if want := strings.Replace(body, `"model":"gpt"`, `"model":"gpt-4o-mini"`, 1); string(oai.LastBody()) != want {
			t.Fatalf("upstream got %s\nwant %s", oai.LastBody(), want)
		}
		var got completionBody
		if err := json.Unmarshal(res.Body.Bytes(), &got); err != nil || got.Choices[0].Message.Content != "Hello from openai" {
			t.Fatalf("answer %s (%v)", res.Body, err)
		}

		// anthropic, translated both ways.
		e.c.JSON("POST", "/v1/chat/completions", chatBody("claude", ""), http.StatusOK, &got, openapitest.Bearer(keyInvoke), org(account))
		if got.Choices[0].Message.Content != "Hello from anthropic" || got.Choices[0].FinishReason != "stop" || got.Usage.PromptTokens != 13 {
			t.Fatalf("anthropic answer %+v", got)
		}
		var sent struct {
			System    []map[string]any `json:"system"`
			MaxTokens int              `json:"max_tokens"`
			Messages  []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(ant.LastBody(), &sent); err != nil || len(sent.System) != 1 || len(sent.Messages) != 1 || sent.MaxTokens == 0 {
			t.Fatalf("anthropic got %s", ant.LastBody())
		}

		// Streams: openai's chunks as they came, anthropic's translated,
		// echo's built in; usage reaches only a client that asked.
		for _, tt := range []struct {
			alias, want string
			usage       bool
		}{{"gpt", "Hello from openai", false}, {"claude", "Hello from anthropic", true}, {"echo", "Say hello", false}} {
			extra := `,"stream":true`
			if tt.usage {
				extra += `,"stream_options":{"include_usage":true}`
			}
			res := e.c.Do("POST", "/v1/chat/completions", chatBody(tt.alias, extra), http.StatusOK, user, org(account))
			if ct := res.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("%s: Content-Type %q", tt.alias, ct)
			}
			chunks, done := sse(t, res.Body)
			if !done || streamText(t, chunks) != tt.want {
				t.Fatalf("%s: stream %v done=%v", tt.alias, chunks, done)
			}
			if hasUsage := strings.Contains(chunks[len(chunks)-1], `"usage"`); hasUsage != tt.usage {
				t.Fatalf("%s: last chunk %s", tt.alias, chunks[len(chunks)-1])
			}
		}
		if !bytes.Contains(oai.LastBody(), []byte(`"stream_options":{"include_usage":true}`)) {
			t.Fatalf("usage not asked of the upstream: %s", oai.LastBody())
		}

		// No usage from the upstream: estimated with tiktoken.
		oai.SetFault(musetest.NoUsage)
		e.c.Do("POST", "/v1/chat/completions", chatBody("gpt", ""), http.StatusOK, user, org(account))

		rows := e.usage(t)
		if len(rows) != 6 {
			t.Fatalf("usage rows %+v, want 6", rows)
		}
		if r := rows[0]; r.Provider != "openai" || r.Model != "gpt-4o-mini" || r.Prompt != 11 || r.Completion != 3 || r.Estimated || r.Status != "ok" {
			t.Fatalf("first row %+v", r)
		}
		if r := rows[1]; r.Provider != "anthropic" || !strings.HasPrefix(r.Caller, "key_") || r.Prompt != 13 {
			t.Fatalf("key's row %+v", r)
		}
		if r := rows[5]; !r.Estimated || r.Prompt < 10 || r.Completion != 4 {
			t.Fatalf("estimated row %+v", r)
		}
		var events int
		if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE type = 'muse.tokens.consumed'`).Scan(&events); err != nil || events != 6 {
			t.Fatalf("events = %d, %v", events, err)
		}
		var models struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		e.c.JSON("GET", "/v1/models", "", http.StatusOK, &models, user, org(account))
		if len(models.Data) != 3 || models.Data[0].ID != "echo" {
			t.Fatalf("models %+v", models)
		}
	})
}

func TestFailover(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, func(o *muse.Options, _ *httpapi.Deps) { o.UpstreamTimeout = 300 * time.Millisecond })
		first := musetest.NewOpenAI(t, "first")
		second := musetest.NewAnthropic(t, "second")
		e.alias(t, "m", target{CredentialID: e.credential(t, "openai", "a", first.URL+"/v1"), Model: "one"},
			target{CredentialID: e.credential(t, "anthropic", "b", second.URL), Model: "two"})
		user := []openapitest.Option{openapitest.Bearer(e.member), org(account)}
		var got completionBody
		for _, fault := range []musetest.Fault{musetest.RateLimited, musetest.ServerError, musetest.Hang, musetest.ServerError} {
			first.SetFault(fault)
			e.c.JSON("POST", "/v1/chat/completions", chatBody("m", ""), http.StatusOK, &got, user...)
			if got.Choices[0].Message.Content != "Hello from second" {
				t.Fatalf("fault %d: answer %+v", fault, got)
			}
		}
		// A stream fails over before its first byte too.
		first.SetFault(musetest.ServerError)
		res := e.c.Do("POST", "/v1/chat/completions", chatBody("m", `,"stream":true`), http.StatusOK, user...)
		if chunks, _ := sse(t, res.Body); streamText(t, chunks) != "Hello from second" {
			t.Fatalf("stream failover: %v", chunks)
		}
		// Five failures in a row: the first target rests for 30 s.
		calls := first.Calls()
		first.SetFault(musetest.OK)
		e.c.JSON("POST", "/v1/chat/completions", chatBody("m", ""), http.StatusOK, &got, user...)
		if first.Calls() != calls || got.Choices[0].Message.Content != "Hello from second" {
			t.Fatalf("a resting target was called (%d → %d)", calls, first.Calls())
		}
		// The request's own fault is not failed over: the upstream's 400 as it gave it.
		second.SetFault(musetest.BadRequest)
		calls = second.Calls()
		e.c.Code("POST", "/v1/chat/completions", chatBody("m", ""), http.StatusBadRequest, "", user...)
		if second.Calls() != calls+1 {
			t.Fatal("the 400 was not the last target's")
		}
		// Every target failing: 502 in OpenAI's shape.
		second.SetFault(musetest.ServerError)
		e.c.Code("POST", "/v1/chat/completions", chatBody("m", ""), http.StatusBadGateway, "upstream_failed", user...)
	})
}

func TestMidStreamFailureReachesTheClient(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		first := musetest.NewOpenAI(t, "first")
		second := musetest.NewOpenAI(t, "second")
		e.alias(t, "m", target{CredentialID: e.credential(t, "openai", "a", first.URL+"/v1"), Model: "one"},
			target{CredentialID: e.credential(t, "openai", "b", second.URL+"/v1"), Model: "two"})
		first.SetFault(musetest.MidStream)
		res := e.c.Do("POST", "/v1/chat/completions", chatBody("m", `,"stream":true`), http.StatusOK, openapitest.Bearer(e.member), org(account))
		chunks, done := sse(t, res.Body)
		if done || len(chunks) < 2 || !strings.Contains(chunks[len(chunks)-1], `"upstream_failed"`) || second.Calls() != 0 {
			t.Fatalf("chunks %v done=%v second=%d", chunks, done, second.Calls())
		}
		rows := e.usage(t)
		if len(rows) != 1 || rows[0].Status != muse.StatusUpstreamFailed || !rows[0].Estimated || rows[0].Completion != 1 {
			t.Fatalf("rows %+v", rows)
		}
	})
}

func TestClientLeavesAStream(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		up := musetest.NewOpenAI(t, "slow")
		up.Pause = make(chan struct{})
		up.Words = []string{"one", " two", " three", " four"}
		e.alias(t, "m", target{CredentialID: e.credential(t, "openai", "a", up.URL+"/v1"), Model: "one"})
		srv := httptest.NewServer(e.h)
		defer srv.Close()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(chatBody("m", `,"stream":true`)))
		req.Header.Set("Authorization", "Bearer "+e.member)
		req.Header.Set(muse.OrganizationHeader, account)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		for seen := 0; seen < 3 && sc.Scan(); {
			if strings.HasPrefix(sc.Text(), "data: ") {
				seen++
			}
		}
		res.Body.Close() // the client leaves at the third chunk
		eventually(t, "the usage row", func() bool {
			var n int
			_ = e.db.QueryRow(t.Context(), `SELECT count(*) FROM usage`).Scan(&n)
			return n == 1
		})
		rows := e.usage(t)
		if rows[0].Status != muse.StatusClientClosed || !rows[0].Estimated || rows[0].Completion != 2 {
			t.Fatalf("row %+v", rows[0])
		}
	})
}

func TestRefusals(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, func(_ *muse.Options, d *httpapi.Deps) { d.MaxRequestBytes = 1 << 20 })
		up := musetest.NewOpenAI(t, "up")
		e.alias(t, "gpt", target{CredentialID: e.credential(t, "openai", "a", up.URL+"/v1"), Model: "m"})
		user := openapitest.Bearer(e.member)
		for _, tt := range []struct {
			name, body string
			opts       []openapitest.Option
			status     int
			code       string
		}{
			{"UnknownAlias", chatBody("nope", ""), []openapitest.Option{user, org(account)}, 404, "model_not_found"},
			{"NotAChatRequest", `{"prompt":"hi"}`, []openapitest.Option{user, org(account)}, 400, "invalid_request"},
			{"NoMessages", `{"model":"gpt","messages":[]}`, []openapitest.Option{user, org(account)}, 400, "invalid_request"},
			{"BadRole", `{"model":"gpt","messages":[{"role":"wizard","content":"x"}]}`, []openapitest.Option{user, org(account)}, 400, "invalid_request"},
			{"NotJSON", `{"model":`, []openapitest.Option{user, org(account)}, 400, "invalid_request"},
			{"TooLarge", `{"model":"gpt","messages":[{"role":"user","content":"` + strings.Repeat("x", 10<<20) + `"}]}`,
				[]openapitest.Option{user, org(account)}, 413, "request_too_large"},
			{"NoOrganization", chatBody("gpt", ""), []openapitest.Option{user}, 400, "invalid_request"},
			{"NoToken", chatBody("gpt", ""), []openapitest.Option{org(account)}, 401, "unauthenticated"},
			{"NotAMember", chatBody("gpt", ""), []openapitest.Option{openapitest.Bearer(e.stranger), org(account)}, 403, "forbidden"},
			{"KeyWithoutScope", chatBody("gpt", ""), []openapitest.Option{openapitest.Bearer(keyRead), org(account)}, 403, "insufficient_scope"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e.c.Code("POST", "/v1/chat/completions", tt.body, tt.status, tt.code, tt.opts...)
			})
		}
		if up.Calls() != 0 {
			t.Fatalf("a refused request reached the upstream %d times", up.Calls())
		}

		// Identity down: 503, failing closed.
		e.identity.setDown(true)
		e.c.Code("POST", "/v1/chat/completions", chatBody("gpt", ""), 503, "unavailable", openapitest.Bearer(e.member), org(account))
		e.identity.setDown(false)

		// The budget: reached, then 429 in OpenAI's shape.
		e.c.Do("PUT", "/v1/accounts/"+account+"/budget", `{"monthly_tokens":10}`, http.StatusOK, openapitest.Bearer(e.owner))
		e.c.Do("POST", "/v1/chat/completions", chatBody("gpt", ""), http.StatusOK, user, org(account))
		res := e.c.Code("POST", "/v1/chat/completions", chatBody("gpt", ""), 429, "budget_exhausted", user, org(account))
		if !strings.Contains(res.Body.String(), `"type":"insufficient_quota"`) {
			t.Fatalf("429 body %s", res.Body)
		}
	})
}

func TestVaultKeyChanged(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		up := musetest.NewOpenAI(t, "up")
		id := e.credential(t, "openai", "main", up.URL+"/v1")
		e.alias(t, "gpt", target{CredentialID: id, Model: "m"})
		// The credential sealed under another key (the vault key changed).
		if _, err := e.db.Exec(t.Context(), `UPDATE provider_credentials SET sealed_key = $1 WHERE id = $2`,
			[]byte("sealed under some other key, unreadable now"), id); err != nil {
			t.Fatal(err)
		}
		res := e.c.Code("POST", "/v1/chat/completions", chatBody("gpt", ""), 401, "provider_credential_unreadable",
			openapitest.Bearer(e.member), org(account))
		if !strings.Contains(res.Body.String(), id) || !strings.Contains(res.Body.String(), "main") || strings.Contains(res.Body.String(), "sk-test") {
			t.Fatalf("401 body %s", res.Body)
		}
	})
}
