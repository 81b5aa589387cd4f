//go:build e2e

package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/parlor"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// otlpSpan is what the receiver keeps of one exported span.
type otlpSpan struct {
	service, name, traceID, spanID, parentID string
	kind                                     int32
}

// otlpReceiver is an OTLP/HTTP trace endpoint: it decodes each export's
// protobuf and keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rc.spans = append(rc.spans, otlpSpan{service: service, name: s.GetName(), kind: int32(s.GetKind()),
					traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId())})
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Write(out)
}

func (rc *otlpReceiver) trace(id string) []otlpSpan {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []otlpSpan
	for _, s := range rc.spans {
		if s.traceID == id {
			out = append(out, s)
		}
	}
	return out
}

// TestOneTraceSpansGatewayBoxAndIdentity exports every service's spans to
// an in-process OTLP receiver and follows one request through the gateway
// to box, which asks identity about membership: one trace, continuing the
// caller's traceparent, with a server span in each service and each
// server span the child of its caller's client span. Then the same from a
// browser's page: parlor's server span, its call to the gateway, and on.
func TestOneTraceSpansGatewayBoxAndIdentity(t *testing.T) {
	rc := &otlpReceiver{}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	otel := e2e.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL, "OTEL_BSP_SCHEDULE_DELAY": "100"}
	with := func(env e2e.Env) e2e.Env {
		for k, v := range otel {
			env[k] = v
		}
		return env
	}

	idEnv := identityEnv(t, sqldb.SQLite)
	e2e.MustRun(t, idEnv, "identity", "migrate")
	identity := e2e.Start(t, with(idEnv), "identity", "serve")
	boxEnv := e2e.Env{"DATABASE_URL": sqltest.URL(t, sqldb.SQLite), "BOX_IDENTITY_URL": identity.URL, "BOX_MASTER_KEY": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}
	e2e.MustRun(t, boxEnv, "box", "migrate")
	box := e2e.Start(t, with(boxEnv), "box", "serve")
	gw := e2e.Start(t, with(e2e.Env{"IDENTITY_URL": identity.URL, "IDENTITY_ISSUER": "http://localhost:" + portOf(identity.URL), "BOX_URL": box.URL}), "gateway", "serve")

	register(t, gw.URL, "otlp@example.com", "otlp password")
	tok := login(t, gw.URL, "otlp@example.com", "otlp password")
	team := e2e.Client{Base: gw.URL, Token: tok}.Do(t, "POST", "/v1/accounts", map[string]string{"name": "Exporters"}).Expect(t, http.StatusCreated).JSON(t)["id"].(string)

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("GET", gw.URL+"/v1/accounts/"+team+"/entitlements", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("entitlements through the gateway: %d", resp.StatusCode)
	}

	const server, client = 2, 3 // OTLP span kinds
	serverOf := func(spans []otlpSpan, service string) *otlpSpan {
		for i, s := range spans {
			if s.service == service && s.kind == server {
				return &spans[i]
			}
		}
		return nil
	}
	var spans []otlpSpan
	testutil.Eventually(t, 10*time.Second, "server spans of gateway, box and identity in the trace", func() bool {
		spans = rc.trace(traceID)
		return serverOf(spans, "gateway") != nil && serverOf(spans, "box") != nil && serverOf(spans, "identity") != nil
	})
	gwSpan := serverOf(spans, "gateway")
	if gwSpan.parentID != callerSpan {
		t.Errorf("gateway's server span has parent %s, want the caller's %s", gwSpan.parentID, callerSpan)
	}
	if gwSpan.name != "GET /v1/accounts/{id}/entitlements" && gwSpan.name[:4] != "GET " {
		t.Errorf("gateway's server span is named %q, want the method and route", gwSpan.name)
	}
	hops := func(spans []otlpSpan, hops ...[2]string) {
		t.Helper()
		byID := map[string]otlpSpan{}
		for _, s := range spans {
			byID[s.spanID] = s
		}
		for _, hop := range hops {
			callee, caller := hop[0], hop[1]
			s := serverOf(spans, callee)
			parent, ok := byID[s.parentID]
			if !ok || parent.kind != client {
				t.Errorf("%s's server span %q: parent %s is not an exported client span (got %+v)", callee, s.name, s.parentID, parent)
				continue
			}
			grand, ok := byID[parent.parentID]
			if !ok || grand.service != caller {
				t.Errorf("%s's caller span %q descends from %+v, want a %s span", callee, parent.name, grand, caller)
			}
		}
	}
	hops(spans, [2]string{"box", "gateway"}, [2]string{"identity", "box"})

	// A page of the web app: parlor's span is the root of the rest.
	web := e2e.Start(t, with(e2e.Env{"PARLOR_API_URL": gw.URL}), "parlor", "serve")
	const pageTrace, browserSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, _ = http.NewRequest("GET", web.URL+"/app/accounts/"+team+"/entitlements", nil)
	req.AddCookie(&http.Cookie{Name: parlor.CookieName, Value: tok})
	req.Header.Set("traceparent", "00-"+pageTrace+"-"+browserSpan+"-01")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the entitlements page: %d", resp.StatusCode)
	}
	testutil.Eventually(t, 10*time.Second, "server spans of parlor, gateway, box and identity in the page's trace", func() bool {
		spans = rc.trace(pageTrace)
		return serverOf(spans, "parlor") != nil && serverOf(spans, "gateway") != nil && serverOf(spans, "box") != nil && serverOf(spans, "identity") != nil
	})
	if p := serverOf(spans, "parlor"); p.parentID != browserSpan || p.name != "GET /app/accounts/{id}/entitlements" {
		t.Errorf("parlor's server span %q has parent %s, want the page route under the browser's %s", p.name, p.parentID, browserSpan)
	}
	// The page asks the gateway more than once (the user, then the
	// entitlements), so identity also answers the gateway directly here.
	hops(spans, [2]string{"gateway", "parlor"}, [2]string{"box", "gateway"})
}
