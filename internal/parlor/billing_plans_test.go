package parlor_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

const billingPlanID = "11111111-1111-4111-8111-111111111111"

// fakePlanWrites is the gateway as the plan form sees it: billing's plan
// writes answered with billing's rules and problem body (the rules of
// internal/billing's PlanInput, restated), everything else by fakeBilling.
// It records the bodies it was sent.
type fakePlanWrites struct {
	fakeBilling
	mu     sync.Mutex
	bodies []string
}

var (
	integerLiteral = regexp.MustCompile(`^-?[0-9]+$`)
	currencyCode   = regexp.MustCompile(`^"[a-z]{3}"$`)
)

func (f *fakePlanWrites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	create := r.Method == "POST" && r.URL.Path == "/v1/operator/plans"
	update := r.Method == "PATCH" && r.URL.Path == "/v1/operator/plans/"+billingPlanID
	if !create && !update {
		f.fakeBilling.ServeHTTP(w, r)
		return
	}
	f.fakeBilling.mu.Lock()
	down := f.fakeBilling.down
	f.fakeBilling.mu.Unlock()
	if down {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"code":"unavailable","detail":"the payment processor is unavailable"}`)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, r.Method+" "+string(raw))
	f.mu.Unlock()
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &body) != nil {
		http.Error(w, "bad json", 400)
		return
	}
	type field struct {
		Field string `json:"field"`
		Code  string `json:"code"`
	}
	var problems []field
	add := func(f, c string) { problems = append(problems, field{f, c}) }
	if string(body["name"]) == `""` {
		add("name", "required")
	}
	if string(body["products"]) == `[]` {
		add("products", "required")
	}
	switch amount := string(body["amount"]); {
	case !integerLiteral.MatchString(amount):
		add("amount", "integer_minor_units")
	case strings.HasPrefix(amount, "-"):
		add("amount", "negative")
	}
	switch {
	case !currencyCode.Match(body["currency"]):
		add("currency", "iso4217_lower")
	case update && string(body["currency"]) != `"usd"`:
		add("currency", "currency_mismatch")
	}
	if i := string(body["interval"]); i != `"once"` && i != `"month"` && i != `"year"` {
		add("interval", "one_of")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": "validation_failed", "detail": "the request has invalid fields", "errors": problems})
		return
	}
	status := http.StatusOK
	if create {
		status = http.StatusCreated
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"plan": map[string]any{"id": billingPlanID, "name": "x", "products": []string{"platform"},
		"amount": 1, "currency": "usd", "interval": "once", "active": true}})
}

func (f *fakePlanWrites) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return ""
	}
	return f.bodies[len(f.bodies)-1]
}

func planValues(over map[string]string, products ...string) url.Values {
	v := url.Values{"name": {"Team"}, "amount": {"30000"}, "currency": {"usd"}, "interval": {"once"}, "trial_days": {""},
		"version_range": {""}, "meter": {""}}
	for k, x := range over {
		v.Set(k, x)
	}
	v["products"] = products
	return v
}

func TestOperatorPlanForm(t *testing.T) {
	fake := &fakePlanWrites{}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	base := startParlor(t, api.URL)
	as := func(token string) *visitor {
		v := newVisitor(t, base)
		v.cookie = token
		return v
	}
	edit := "/operator/plans/" + billingPlanID

	t.Run("pages", func(t *testing.T) {
		as(billingStaff).get("/operator/plans").expect(t, 200, "Plans", "Edit", "New plan", "Price in minor units", "12000 is 120.00 USD", "Create the plan")
		a := as(billingStaff).get(edit).expect(t, 200, "Edit plan: Platform", "now 120.00 USD once", "Save the plan", "On sale")
		for _, want := range []string{`value="12000"`, `value="usd"`, `value="platform" checked`, `value="once" selected`, `name="active" value="yes" checked`} {
			if !strings.Contains(a.Body, want) {
				t.Errorf("the edit form does not hold %s", want)
			}
		}
		as(billingStaff).get("/operator/plans/99999999-9999-4999-8999-999999999999").expect(t, 404)
		as(billingOwner).get(edit).expect(t, 404)
		as(billingOwner).post("/operator/plans", planValues(nil, "platform")).expect(t, 404)
	})

	for _, tt := range []struct {
		name     string
		path     string
		form     url.Values
		status   int
		texts    []string
		sent     string // a fragment of the body billing received
		keepsVal string // the typed value the refused form shows again
	}{
		{"create", "/operator/plans", planValues(map[string]string{"currency": "USD"}, "platform", "identity"), 303, nil,
			`"amount":30000`, ""},
		{"create, lower-cased currency sent", "/operator/plans", planValues(map[string]string{"currency": " EUR "}, "courier"), 303, nil,
			`"currency":"eur"`, ""},
		{"fraction amount", "/operator/plans", planValues(map[string]string{"amount": "120.00"}, "platform"), 422,
			[]string{"Please correct the fields marked below.", "whole number of minor units (cents for USD): 12000 for 120.00 USD"}, `"amount":120.00`, `value="120.00"`},
		{"amount with a symbol", "/operator/plans", planValues(map[string]string{"amount": "$120"}, "platform"), 422,
			[]string{"whole number of minor units"}, `"amount":"$120"`, `value="$120"`},
		{"negative amount", "/operator/plans", planValues(map[string]string{"amount": "-5"}, "platform"), 422,
			[]string{"The price cannot be negative."}, `"amount":-5`, ""},
		{"currency not a code", "/operator/plans", planValues(map[string]string{"currency": "dollars"}, "platform"), 422,
			[]string{"three-letter ISO 4217 currency code"}, `"currency":"dollars"`, `value="dollars"`},
		{"interval unknown", "/operator/plans", planValues(map[string]string{"interval": "weekly"}, "platform"), 422,
			[]string{"Choose once, every month or every year."}, `"interval":"weekly"`, ""},
		{"everything wrong at once", "/operator/plans", planValues(map[string]string{"name": "", "amount": "", "currency": "x"}), 422,
			[]string{"Enter the plan's name", "Tick at least one product", "whole number of minor units", "ISO 4217"}, `"products":[]`, ""},
		{"update", edit, planValues(map[string]string{"name": "Platform", "amount": "15000"}, "platform"), 303, nil,
			`"active":false`, ""},
		{"update, currency changed", edit, planValues(map[string]string{"currency": "eur"}, "platform"), 422,
			[]string{"Edit plan: Platform", "A plan's currency cannot change"}, `"currency":"eur"`, `value="eur"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := as(billingStaff).post(tt.path, tt.form)
			if tt.status == 303 {
				want := "/operator/plans?done=created"
				if tt.path == edit {
					want = "/operator/plans?done=updated"
				}
				if a.Status != 303 || a.location() != want {
					t.Fatalf("status %d to %q, want 303 to %s\n%s", a.Status, a.location(), want, a.Body)
				}
			} else {
				a.expect(t, tt.status, tt.texts...)
				if !strings.Contains(a.Body, `aria-invalid="true"`) {
					t.Error("no field is marked invalid")
				}
			}
			if got := fake.last(); !strings.Contains(got, tt.sent) {
				t.Errorf("billing received %s, want it to hold %s", got, tt.sent)
			}
			if tt.keepsVal != "" && !strings.Contains(a.Body, tt.keepsVal) {
				t.Errorf("the refused form does not show %s again", tt.keepsVal)
			}
		})
	}

	t.Run("methods", func(t *testing.T) {
		fake.mu.Lock()
		var methods []string
		for _, b := range fake.bodies {
			methods = append(methods, strings.SplitN(b, " ", 2)[0])
		}
		fake.mu.Unlock()
		if !slices.Contains(methods, "PATCH") || !slices.Contains(methods, "POST") {
			t.Errorf("methods sent = %v, want POST for new plans and PATCH for changes", methods)
		}
		as(billingStaff).get("/operator/plans?done=created").expect(t, 200, "The plan was created")
	})

	t.Run("billing down", func(t *testing.T) {
		fake.fakeBilling.mu.Lock()
		fake.fakeBilling.down = true
		fake.fakeBilling.mu.Unlock()
		defer func() {
			fake.fakeBilling.mu.Lock()
			fake.fakeBilling.down = false
			fake.fakeBilling.mu.Unlock()
		}()
		// The write fails closed and the form keeps what was typed.
		a := as(billingStaff).post("/operator/plans", planValues(map[string]string{"name": "Later"}, "platform"))
		a.expect(t, http.StatusServiceUnavailable)
		if !strings.Contains(a.Body, `value="Later"`) {
			t.Error("the form lost what was typed")
		}
	})
}
