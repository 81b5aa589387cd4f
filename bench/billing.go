package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/stripeproc"
	"github.com/platformco/platform/internal/sqldb"
)

// The billing scenarios (billing.md §8): signed webhook ingest, checkout
// creation over stripe-mock, and the public plans read. They share one
// billing process with the stripe adapter pointed at stripe-mock
// (github.com/stripe/stripe-mock, installed as .ci/run installs it), its
// four plans seeded by `platform billing plans seed`, and identity (the
// running one) answering its membership questions.

const (
	// benchStripeKey is the key billing and the direct baseline give
	// stripe-mock, which takes any test key.
	benchStripeKey = "sk_test_bench"
	// benchWebhookSecret signs the harness's webhook bodies as Stripe
	// signs them (t=…,v1=HMAC-SHA256 of "t.body").
	benchWebhookSecret = "whsec_bench_0123456789abcdef0123456789abcdef"
	// ingestSenders is billing.md §8's concurrency for webhook ingest.
	ingestSenders = 16
)

// billingRig is billing and stripe-mock as processes, billing's database
// open beside them for the scenarios' checks.
type billingRig struct {
	svc       *service
	mock      *exec.Cmd
	mockDone  chan struct{}
	mockURL   string
	db        *sqldb.DB
	drop      func()
	plan      billing.Plan // the seeded one-time platform plan
	delivered atomic.Int64 // webhook events answered 200, every round and warm-up
}

func (r *billingRig) stop() {
	if r == nil {
		return
	}
	if r.svc != nil {
		r.svc.stop()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.mock != nil {
		_ = r.mock.Process.Kill()
		<-r.mockDone
	}
	if r.drop != nil {
		r.drop()
	}
}

// stripeMockPath finds stripe-mock as internal/billing/stripemock does:
// $STRIPE_MOCK, PATH, then GOBIN, GOPATH/bin and ~/go/bin.
func stripeMockPath() (string, error) {
	if p := os.Getenv("STRIPE_MOCK"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	dirs := []string{os.Getenv("GOBIN")}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(d, "stripe-mock")); err == nil && !st.IsDir() {
			return filepath.Join(d, "stripe-mock"), nil
		}
	}
	return "", errors.New("stripe-mock not found: go install github.com/stripe/stripe-mock@v0.203.0 (as .ci/run does)")
}

// startStripeMock runs stripe-mock on a free loopback port.
func (r *billingRig) startStripeMock(ctx context.Context, logPath string) error {
	bin, err := stripeMockPath()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	r.mock = exec.Command(bin, "-http-addr", addr)
	r.mock.Stdout, r.mock.Stderr = logFile, logFile
	if err := r.mock.Start(); err != nil {
		logFile.Close()
		r.mock = nil
		return fmt.Errorf("start stripe-mock: %w", err)
	}
	r.mockDone = make(chan struct{})
	go func() {
		_ = r.mock.Wait()
		logFile.Close()
		close(r.mockDone)
	}()
	r.mockURL = "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stripe-mock not listening within 30s; see %s", logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// billingRig starts (once per run) stripe-mock and billing on a fresh
// database, seeded with the four plans.
func (b *bench) billingRig(ctx context.Context) (*billingRig, error) {
	if b.billing != nil {
		return b.billing, nil
	}
	rig := &billingRig{}
	if err := rig.startStripeMock(ctx, filepath.Join(b.dir, "stripe-mock.log")); err != nil {
		rig.stop()
		return nil, err
	}
	dbURL, drop, err := freshDatabase(ctx, b.cfg, filepath.Join(b.dir, "billing.db"), "billing")
	if err != nil {
		rig.stop()
		return nil, err
	}
	rig.drop = drop
	port, err := freePort()
	if err != nil {
		rig.stop()
		return nil, err
	}
	env := map[string]string{
		"PORT":                          strconv.Itoa(port),
		"DATABASE_URL":                  dbURL,
		"BILLING_PROCESSOR":             "stripe",
		"BILLING_STRIPE_SECRET_KEY":     benchStripeKey,
		"BILLING_STRIPE_WEBHOOK_SECRET": benchWebhookSecret,
		"BILLING_STRIPE_API_URL":        rig.mockURL,
		"BILLING_IDENTITY_URL":          b.p.identity.URL,
		"BILLING_BOX_URL":               b.p.box.URL,
		"IDENTITY_ISSUER":               b.p.identity.URL,
		"BILLING_PUBLIC_URL":            "http://127.0.0.1:" + strconv.Itoa(port),
	}
	for k, v := range b.cfg.serviceEnv {
		env[k] = v
	}
	if err := runOnce(ctx, b.p.bin, env, "billing", "migrate"); err != nil {
		rig.stop()
		return nil, err
	}
	if err := runOnce(ctx, b.p.bin, env, "billing", "plans", "seed"); err != nil {
		rig.stop()
		return nil, err
	}
	logPath := filepath.Join(b.dir, "billing.log")
	if rig.svc, err = startReady(ctx, "billing", port, logPath, b.p.bin, env, "billing", "serve"); err != nil {
		rig.stop()
		return nil, err
	}
	if rig.db, err = sqldb.Open(ctx, dbURL); err != nil {
		rig.stop()
		return nil, err
	}
	p := &rig.plan
	err = rig.db.QueryRow(ctx, `SELECT CAST(id AS TEXT), amount, currency, processor_price_id FROM plans
		WHERE interval = 'once' AND name = 'Platform'`).Scan(&p.ID, &p.Amount, &p.Currency, &p.ProcessorPriceID)
	if err != nil {
		rig.stop()
		return nil, fmt.Errorf("the seeded Platform plan: %w", err)
	}
	b.billing = rig
	return rig, nil
}

// count runs a count query on billing's database.
func (r *billingRig) count(ctx context.Context, q string) (int64, error) {
	var n int64
	err := r.db.QueryRow(ctx, q).Scan(&n)
	return n, err
}

// checkoutCompleted is a checkout.session.completed event in Stripe's
// JSON shape, as the test processor posts it: a paid one-time checkout
// of plan by account.
func checkoutCompleted(id string, created int64, account, user string, plan billing.Plan) []byte {
	return fmt.Appendf(nil, `{"id":"evt_%[1]s","object":"event","api_version":%[2]q,"created":%[3]d,"livemode":false,"pending_webhooks":1,`+
		`"type":"checkout.session.completed","data":{"object":{"id":"cs_%[1]s","object":"checkout.session","mode":"payment",`+
		`"status":"complete","payment_status":"paid","client_reference_id":%[4]q,"payment_intent":"pi_%[1]s",`+
		`"customer_details":{"email":"buyer@bench.example.com"},"amount_total":%[5]d,"currency":%[6]q,`+
		`"metadata":{"account_id":%[4]q,"plan_id":%[7]q,"user_id":%[8]q}}}}`,
		id, stripe.APIVersion, created, account, plan.Amount, plan.Currency, plan.ID, user)
}

// webhookOp posts new signed events, each a sale by one of the prepared
// team accounts: a new payment, its inbox item, its outbox row and its
// queued receipt in one transaction. Every event id is new, so each
// answer 200 is one event applied. The sessions were not opened through
// billing, so the items wait in needs_attention (the buyer unchecked):
// the same rows and statements as an awaiting_grant one.
func (b *bench) webhookOp(rig *billingRig) func(i int) op {
	url := rig.svc.URL + "/v1/webhooks/stripe"
	return func(i int) op {
		u := b.user(i)
		k := 0
		return func(ctx context.Context) error {
			k++
			now := time.Now()
			body := checkoutCompleted(fmt.Sprintf("bench%02d_%d", i, k), now.Unix(), u.AccountID, u.ID, rig.plan)
			err := request{client: b.client, method: "POST", url: url, path: "/v1/webhooks/stripe", body: body, want: http.StatusOK,
				header: http.Header{"Stripe-Signature": {stripeproc.Sign(body, benchWebhookSecret, now)}}}.do(ctx)
			if err != nil {
				return err
			}
			rig.delivered.Add(1)
			return nil
		}
	}
}

// ingest: signed checkout.session.completed events from 16 concurrent
// senders, each applied once (checked in billing's database after the
// run).
func (b *bench) billingIngest(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "ingest", Title: fmt.Sprintf("billing: signed POST /v1/webhooks/stripe applied/s, %d senders, every event new", ingestSenders), Unit: "events/s"}
	rig, err := b.billingRig(ctx)
	if err != nil {
		return nil, err
	}
	before, err := rig.count(ctx, `SELECT count(*) FROM processor_events WHERE outcome = 'applied'`)
	if err != nil {
		return nil, err
	}
	sent := rig.delivered.Load()
	total, byRound, err := b.interleaved(ctx, clients(ingestSenders, b.webhookOp(rig)))
	if err != nil {
		return nil, err
	}
	s.Levels = append(s.Levels, total[0])
	var rps rounds
	for _, l := range byRound[0] {
		rps = append(rps, l.RPS)
	}
	goal := 1000.0
	if b.cfg.engine == "postgres" {
		goal = 2000
	}
	s.medianTarget(fmt.Sprintf("≥ %.0f signed events/s applied (%s), %d senders", goal, b.cfg.engine, ingestSenders), rps,
		func(v float64) string { return fmt.Sprintf("%.0f/s", v) }, func(v float64) bool { return v >= goal })
	after, err := rig.count(ctx, `SELECT count(*) FROM processor_events WHERE outcome = 'applied'`)
	if err != nil {
		return nil, err
	}
	payments, err := rig.count(ctx, `SELECT count(*) FROM payments`)
	if err != nil {
		return nil, err
	}
	items, err := rig.count(ctx, `SELECT count(*) FROM reconciliations`)
	if err != nil {
		return nil, err
	}
	want := rig.delivered.Load() - sent
	once := after-before == want && payments == rig.delivered.Load() && items == payments
	s.target("every event answered 200 applied once: a payment and an inbox item each",
		fmt.Sprintf("%d answered, %d applied, %d payments, %d items in all", want, after-before, payments, items), once)
	s.errorsTarget()
	return s, nil
}

// checkout: POST /v1/accounts/{id}/checkout at one client through billing
// to stripe-mock, against the same Checkout Session created by the Stripe
// adapter straight at stripe-mock, interleaved; the p50 difference is what
// billing adds (identity's two answers, its own rows, the JSON).
func (b *bench) billingCheckout(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "checkout", Title: "billing: POST /v1/accounts/{id}/checkout at one client over stripe-mock", Unit: "req/s",
		BaselineName: "the Stripe adapter's Checkout Session create, straight at stripe-mock"}
	rig, err := b.billingRig(ctx)
	if err != nil {
		return nil, err
	}
	u := b.user(0)
	through := request{client: b.client, method: "POST", url: rig.svc.URL + "/v1/accounts/" + u.AccountID + "/checkout",
		path: "/v1/accounts/{id}/checkout", token: u.Token, body: mustJSON(map[string]string{"plan_id": rig.plan.ID}), want: http.StatusCreated}
	// The first checkout makes the account's customer at the processor.
	if err := through.do(ctx); err != nil {
		return nil, fmt.Errorf("first checkout: %w", err)
	}
	var customer string
	if err := rig.db.QueryRow(ctx, `SELECT processor_customer_id FROM customers WHERE account_id = $1`, u.AccountID).Scan(&customer); err != nil {
		return nil, fmt.Errorf("the account's customer: %w", err)
	}
	proc := stripeproc.New(stripeproc.Options{SecretKey: benchStripeKey, APIURL: rig.mockURL})
	spec := billing.CheckoutSpec{Mode: billing.ModePayment, CustomerID: customer, PriceID: rig.plan.ProcessorPriceID,
		AccountID: u.AccountID, PlanID: rig.plan.ID, UserID: u.ID, SuccessURL: rig.svc.URL + "/ok", CancelURL: rig.svc.URL + "/no"}
	direct := func(int) op {
		return func(ctx context.Context) error {
			_, err := proc.CreateCheckout(ctx, spec)
			return err
		}
	}
	total, byRound, err := b.interleaved(ctx, clients(1, direct), clients(1, func(int) op { return through.do }))
	if err != nil {
		return nil, err
	}
	s.Baseline = append(s.Baseline, total[0])
	s.Levels = append(s.Levels, total[1])
	var added rounds
	for r := range byRound[0] {
		added = append(added, byRound[1][r].P50-byRound[0][r].P50)
	}
	s.medianTarget("checkout adds ≤ 5 ms p50 over stripe-mock's own answer, one client", added, ms, func(v float64) bool { return v <= 5 })
	s.errorsTarget()
	return s, nil
}

// plans: the public GET /v1/plans at 32 clients.
func (b *bench) billingPlans(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "plans", Title: "billing: GET /v1/plans (public, four plans) at 32 clients", Unit: "req/s"}
	rig, err := b.billingRig(ctx)
	if err != nil {
		return nil, err
	}
	read := request{client: b.client, method: "GET", url: rig.svc.URL + "/v1/plans", path: "/v1/plans", want: http.StatusOK}
	total, byRound, err := b.interleaved(ctx, clients(32, func(int) op { return read.do }))
	if err != nil {
		return nil, err
	}
	s.Levels = append(s.Levels, total[0])
	var rps rounds
	for _, l := range byRound[0] {
		rps = append(rps, l.RPS)
	}
	s.medianTarget("GET /v1/plans ≥ 5,000 req/s at 32 clients", rps, func(v float64) string { return fmt.Sprintf("%.0f req/s", v) },
		func(v float64) bool { return v >= 5000 })
	s.errorsTarget()
	return s, nil
}
