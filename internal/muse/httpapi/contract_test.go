package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/muse/musetest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestEventsMeetTheContract meters completions of every provider, reads
// the outbox rows as the publisher builds envelopes from them, and
// validates each against the envelope and muse.tokens.consumed's schema.
func TestEventsMeetTheContract(t *testing.T) {
	dir, err := events.LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := events.LoadContract(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		oai := musetest.NewOpenAI(t, "openai")
		oai.SetFault(musetest.NoUsage)
		ant := musetest.NewAnthropic(t, "anthropic")
		e.alias(t, "gpt", target{CredentialID: e.credential(t, "openai", "oai", oai.URL+"/v1"), Model: "m"})
		e.alias(t, "claude", target{CredentialID: e.credential(t, "anthropic", "ant", ant.URL), Model: "m"})
		for _, alias := range []string{"gpt", "claude", "echo"} {
			e.c.Do("POST", "/v1/chat/completions", chatBody(alias, ""), http.StatusOK, openapitest.Bearer(keyInvoke), org(account))
		}
		// A refused request leaves no event.
		e.c.Do("POST", "/v1/chat/completions", chatBody("nope", ""), http.StatusNotFound, openapitest.Bearer(keyInvoke), org(account))

		rows, err := outbox.List(t.Context(), e.db, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("outbox rows = %d, want 3", len(rows))
		}
		for _, r := range rows {
			ev := r.Envelope
			if err := contract.Validate(ev); err != nil {
				t.Errorf("outbox row %d: %v\n%s", r.Seq, err, ev.Data)
				continue
			}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := contract.ValidateJSON(b); err != nil {
				t.Errorf("outbox row %d on the wire: %v", r.Seq, err)
			}
			var data muse.TokensConsumed
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			if ev.Source != "muse" || ev.Type != muse.EventTokensConsumed || ev.Subject != "platform" || data.AccountID != account ||
				data.TotalTokens != data.PromptTokens+data.CompletionTokens || data.Estimated != (data.Provider == "openai") {
				t.Errorf("envelope %s %s %s: %+v", ev.Source, ev.Type, ev.Subject, data)
			}
		}
	})
}
