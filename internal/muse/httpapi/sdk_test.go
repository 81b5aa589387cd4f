package httpapi_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/platformco/platform/internal/muse/musetest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestOpenAISDK points OpenAI's official Go client at muse, as a customer
// would (base URL and organization changed, nothing else): it reads
// answers, streams and the model list, and muse's refusals as OpenAI
// errors.
func TestOpenAISDK(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		oai := musetest.NewOpenAI(t, "openai")
		ant := musetest.NewAnthropic(t, "anthropic")
		e.alias(t, "gpt", target{CredentialID: e.credential(t, "openai", "oai", oai.URL+"/v1"), Model: "gpt-4o-mini"})
		e.alias(t, "claude", target{CredentialID: e.credential(t, "anthropic", "ant", ant.URL), Model: "claude-haiku-4-5"})
		srv := httptest.NewServer(e.h)
		defer srv.Close()
		client := func(key, org string) openai.Client {
			return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(key), option.WithOrganization(org),
				option.WithMaxRetries(0))
		}
		ctx := t.Context()
		c := client(keyInvoke, account)
		params := func(model string) openai.ChatCompletionNewParams {
			return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("Be brief."), openai.UserMessage("Say hello")}}
		}

		for _, tt := range []struct{ model, want string }{
			{"gpt", "Hello from openai"}, {"claude", "Hello from anthropic"}, {"echo", "Say hello"},
		} {
			res, err := c.Chat.Completions.New(ctx, params(tt.model))
			if err != nil || res.Choices[0].Message.Content != tt.want || res.Usage.TotalTokens == 0 {
				t.Fatalf("%s: %+v, %v", tt.model, res, err)
			}
			stream := c.Chat.Completions.NewStreaming(ctx, params(tt.model))
			var got strings.Builder
			for stream.Next() {
				for _, ch := range stream.Current().Choices {
					got.WriteString(ch.Delta.Content)
				}
			}
			if err := stream.Err(); err != nil || got.String() != tt.want {
				t.Fatalf("%s stream: %q, %v", tt.model, got.String(), err)
			}
		}

		page, err := c.Models.List(ctx)
		if err != nil || len(page.Data) != 3 {
			t.Fatalf("models: %+v, %v", page, err)
		}

		// Refusals read as OpenAI's errors.
		for _, tt := range []struct {
			name, key, org, model string
			status                int
			code                  string
		}{
			{"UnknownModel", keyInvoke, account, "nope", 404, "model_not_found"},
			{"KeyWithoutScope", keyRead, account, "gpt", 403, "insufficient_scope"},
			{"BadToken", "not-a-token", account, "gpt", 401, "unauthenticated"},
		} {
			cl := client(tt.key, tt.org)
			_, err := cl.Chat.Completions.New(ctx, params(tt.model))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Code != tt.code || apiErr.Message == "" {
				t.Errorf("%s: %v, want %d %s", tt.name, err, tt.status, tt.code)
			}
		}
		// A stream that breaks mid-way raises the error muse passes on.
		oai.SetFault(musetest.MidStream)
		stream := c.Chat.Completions.NewStreaming(ctx, params("gpt"))
		for stream.Next() {
		}
		if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "upstream_failed") {
			t.Fatalf("mid-stream failure: %v", err)
		}
	})
}
