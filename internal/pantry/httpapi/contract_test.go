package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestEventsMeetTheContract publishes, changes and deletes projects, reads
// the outbox rows as the publisher builds envelopes from them, and
// validates each: the envelope first, then the payload against its
// schema. Every type pantry declares must be seen.
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
		p := e.publish(t, `{"name":"Kettle","tags":["cli"],"uses":["kit"]}`)
		e.c.Do("PATCH", "/v1/projects/kettle", `{"slug":"kettle-pro","visibility":"unlisted"}`, http.StatusOK, openapitest.Bearer(e.member))
		e.c.Do("POST", "/v1/accounts/"+account+"/projects", `{"name":"Robot"}`, http.StatusCreated, openapitest.Bearer(keyWrite))
		e.c.Do("DELETE", "/v1/projects/kettle-pro", "", http.StatusNoContent, openapitest.Bearer(e.owner))
		// A refused write leaves no event.
		e.c.Do("POST", "/v1/accounts/"+account+"/projects", `{"name":"Robot"}`, http.StatusConflict, openapitest.Bearer(e.owner))

		rows, err := outbox.List(t.Context(), e.db, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
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
			var data map[string]any
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			if ev.Source != "pantry" || data["account_id"] != account {
				t.Errorf("%s: source %s data %v", ev.Type, ev.Source, data)
			}
			if data["project_id"] == p.Project.ID && ev.Subject != p.Project.ID {
				t.Errorf("%s: subject %s, want the project", ev.Type, ev.Subject)
			}
			seen[ev.Type]++
		}
		for _, typ := range pantry.EventTypes() {
			if seen[typ] == 0 {
				t.Errorf("no %s row", typ)
			}
		}
		if seen[pantry.EventProjectCreated] != 2 || len(rows) != 4 {
			t.Errorf("rows %v, want two created, one updated, one deleted", seen)
		}
	})
}
