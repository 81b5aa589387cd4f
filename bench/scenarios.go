package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/argon2"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// bench runs the scenarios against one running platform.
type bench struct {
	cfg    config
	p      *platform
	client *http.Client
	dir    string

	grantsOK, revokesOK atomic.Int64
	// billing is the billing scenarios' rig, started by the first of
	// them and stopped at the end of the run.
	billing *billingRig
}

func numCPU() int { return runtime.GOMAXPROCS(0) }

// measure warms up, then measures ops (one per client) closed-loop.
func (b *bench) measure(ctx context.Context, ops []op) (Level, error) {
	if err := ctx.Err(); err != nil {
		return Level{}, err
	}
	if b.cfg.warmup > 0 {
		closedLoop(ops, b.cfg.warmup, 0)
	}
	return closedLoop(ops, b.cfg.duration, 0), ctx.Err()
}

// clients builds n ops, client i's from mk(i).
func clients(n int, mk func(i int) op) []op {
	ops := make([]op, n)
	for i := range ops {
		ops[i] = mk(i)
	}
	return ops
}

func (b *bench) user(i int) user { return b.p.users[i%len(b.p.users)] }

func (b *bench) readOp(base string) func(i int) op {
	return func(i int) op {
		u := b.user(i)
		return request{client: b.client, method: "GET", url: base + "/v1/accounts/" + u.AccountID, path: "/v1/accounts/{id}", token: u.Token, want: http.StatusOK}.do
	}
}

func (b *bench) loginOp(i int) op {
	u := b.user(i)
	body := mustJSON(map[string]string{"email": u.Email, "password": benchPassword})
	return request{client: b.client, method: "POST", url: b.p.identity.URL + "/v1/session", path: "/v1/session", body: body, want: http.StatusCreated}.do
}

func (b *bench) artifactOp(i int) op {
	u := b.user(i)
	body := mustJSON(map[string]string{"artifact": "platform", "version_range": "^1.2.0"})
	return request{client: b.client, method: "POST", url: b.p.box.URL + "/v1/accounts/" + u.AccountID + "/artifact_fetches",
		path: "/v1/accounts/{id}/artifact_fetches", token: u.Token, body: body, want: http.StatusCreated}.do
}

// pairOp grants the platform to an account of the client's own (one
// active entitlement per account and product) and revokes it.
func (b *bench) pairOp(_ int) op {
	account := uuid.NewString()
	grant := request{client: b.client, method: "POST", url: b.p.box.URL + "/v1/operator/entitlements", path: "/v1/operator/entitlements",
		token: b.p.staffToken, want: http.StatusCreated,
		body: mustJSON(map[string]string{"account_id": account, "product": "platform", "version_range": "^1.0.0", "source": "reconciled_payment", "reference": "pi_bench_pair"})}
	return func(ctx context.Context) error {
		var out struct {
			Entitlement struct {
				ID int64 `json:"id"`
			} `json:"entitlement"`
		}
		if _, err := grant.read(ctx, &out); err != nil {
			return err
		}
		b.grantsOK.Add(1)
		revoke := request{client: b.client, method: "POST", url: b.p.box.URL + "/v1/operator/entitlements/" + strconv.FormatInt(out.Entitlement.ID, 10) + "/revoke",
			path: "/v1/operator/entitlements/{id}/revoke", token: b.p.staffToken, want: http.StatusOK}
		if err := revoke.do(ctx); err != nil {
			return err
		}
		b.revokesOK.Add(1)
		return nil
	}
}

// read: GET /v1/accounts/{id} on identity against a bare net/http
// handler returning the same bytes, interleaved round by round.
func (b *bench) read(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "read", Title: "authenticated read: GET /v1/accounts/{id} on identity", Unit: "req/s", BaselineName: "bare net/http handler, same bytes"}
	var bare, reads perRound
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, b.readOp(b.p.bare.URL)), clients(c, b.readOp(b.p.identity.URL)))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		bare, reads = append(bare, byRound[0]), append(reads, byRound[1])
	}
	throughput := peakRatio(reads, bare)
	s.Ratio = throughput.median()
	// PostgreSQL's point reads are coalesced (decision 0016): issue 50
	// measured 38.8% with them and 26.2% without on the 2-core machine.
	want := 0.25
	if b.cfg.engine == "postgres" {
		want = 0.35
	}
	s.medianTarget(fmt.Sprintf("≥ %.0f%% of baseline throughput (peak over levels)", want*100), throughput, pct, func(r float64) bool { return r >= want })
	// At 32 clients on two shared cores the tail is the queue of a
	// saturated machine, which the bare handler's shows as well: no code
	// meets a target there. The tail is judged at one client instead.
	one := b.atLevel(1, reads, reads, func(x, _ Level) float64 { return x.P99 })
	if b.cfg.engine == "sqlite" {
		s.medianTarget("p99 ≤ 2 ms at one client on SQLite", one, ms, func(v float64) bool { return v <= 2 })
	} else {
		s.medianFigure("p99 at one client", one, ms)
	}
	if lv, ok := levelAt(s.Levels, 32); ok {
		base, _ := levelAt(s.Baseline, 32)
		s.Notes = append(s.Notes, fmt.Sprintf("p99 at 32 clients over all rounds: %s (bare handler: %s)", ms(lv.P99), ms(base.P99)))
	}
	s.errorsTarget()
	return s, nil
}

// login: POST /v1/session against raw argon2id hashes per second with
// identity's parameters, on as many goroutines as identity lets hash at
// once (IDENTITY_HASH_CONCURRENCY; one per core by default, decision
// 0017): the target is what identity's own work around the hash costs.
func (b *bench) login(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "login", Title: "login: POST /v1/session", Unit: "req/s", BaselineName: "raw argon2id hashes/s, same parameters"}
	p := identity.DefaultHashParams
	salt := []byte("0123456789abcdef")
	hash := func(int) error {
		argon2.IDKey([]byte(benchPassword), salt, p.Passes, p.MemoryKiB, p.Threads, 32)
		return nil
	}
	hashers := b.hashConcurrency()
	var hashes, hashSeconds float64
	// byRound[r] is round r's best ratio of logins to raw hashes over the
	// levels.
	byRound := make(rounds, b.cfg.rounds)
	for _, c := range b.cfg.levels {
		ops := clients(c, b.loginOp)
		if b.cfg.warmup > 0 {
			plainLoop(hashers, b.cfg.warmup, hash)
			loop(ops, b.cfg.warmup, 0)
		}
		d := b.cfg.duration / time.Duration(b.cfg.rounds)
		var runs []stretch
		for i := range b.cfg.rounds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, _ := plainLoop(hashers, d, hash)
			hashes += r * d.Seconds()
			hashSeconds += d.Seconds()
			run := loop(ops, d, 0)
			runs = append(runs, run)
			if r > 0 {
				byRound[i] = max(byRound[i], summarize(run).RPS/r)
			}
		}
		s.Levels = append(s.Levels, summarize(runs...))
	}
	rate := hashes / hashSeconds
	s.BaselineRate = rate
	s.Ratio = byRound.median()
	s.medianTarget("≥ 90% of baseline (peak over levels)", byRound, pct, func(r float64) bool { return r >= 0.9 })
	s.errorsTarget()
	s.Notes = append(s.Notes, fmt.Sprintf("baseline: %d goroutines hashing (identity's bound) m=%d KiB, t=%d, p=%d", hashers, p.MemoryKiB, p.Passes, p.Threads))
	return s, nil
}

// hashConcurrency is identity's bound on concurrent hashes: the
// IDENTITY_HASH_CONCURRENCY the harness passes, or identity's default.
func (b *bench) hashConcurrency() int {
	if n, err := strconv.Atoi(b.cfg.serviceEnv["IDENTITY_HASH_CONCURRENCY"]); err == nil && n > 0 {
		return n
	}
	return identity.DefaultHashConcurrency()
}

// flood: authenticated reads at 32 clients alone, then the same reads
// while 64 clients log in.
func (b *bench) flood(ctx context.Context) (*Scenario, error) {
	const readers, loggers = 32, 64
	s := &Scenario{Name: "flood", Title: "login flood: authenticated reads (32 clients) while 64 clients log in", Unit: "req/s", BaselineName: "authenticated reads alone"}
	reads := clients(readers, b.readOp(b.p.identity.URL))
	logins := clients(loggers, func(i int) op { return b.loginOp(i + readers) })
	if b.cfg.warmup > 0 {
		loop(reads, b.cfg.warmup, 0)
		loop(logins, b.cfg.warmup, 0)
	}
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	var aloneRuns, duringRuns, loginRuns []stretch
	var byRound rounds
	for range b.cfg.rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		aloneRuns = append(aloneRuns, loop(reads, d, 0))
		// The logins start first and end last, so the reads run wholly
		// inside the flood.
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); loginRuns = append(loginRuns, loop(logins, d+300*time.Millisecond, 0)) }()
		go func() {
			defer wg.Done()
			time.Sleep(150 * time.Millisecond)
			r := loop(reads, d, 0)
			duringRuns = append(duringRuns, r)
		}()
		wg.Wait()
		if a := summarize(aloneRuns[len(aloneRuns)-1]).RPS; a > 0 {
			byRound = append(byRound, summarize(duringRuns[len(duringRuns)-1]).RPS/a)
		}
	}
	alone, during, loginLv := summarize(aloneRuns...), summarize(duringRuns...), summarize(loginRuns...)
	s.Baseline = []Level{alone}
	s.Levels = []Level{during}
	s.Side = []Level{loginLv}
	s.SideName = "logins during the flood"
	s.Ratio = byRound.median()
	s.medianTarget("reads keep ≥ 50% of their throughput", byRound, pct, func(r float64) bool { return r >= 0.5 })
	s.target("no error (reads and logins)", strconv.FormatInt(during.Errors+loginLv.Errors+alone.Errors, 10), during.Errors+loginLv.Errors+alone.Errors == 0)
	return s, nil
}

// artifact: POST /v1/accounts/{id}/artifact_fetches through box, which
// asks identity about the caller's membership on every call.
func (b *bench) artifact(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "artifact", Title: "artifact check: POST …/artifact_fetches through box (identity round trip included)", Unit: "req/s", BaselineName: "authenticated read on identity"}
	var reads, fetches perRound
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.artifactOp))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		reads, fetches = append(reads, byRound[0]), append(fetches, byRound[1])
	}
	ratio := peakRatio(fetches, reads)
	s.Ratio = ratio.median()
	s.medianTarget("≥ 35% of the authenticated read's throughput", ratio, pct, func(r float64) bool { return r >= 0.35 })
	s.errorsTarget()
	return s, nil
}

// grantRevoke: grant + revoke pairs on box as an operator, then every
// audit row accounted for.
func (b *bench) grantRevoke(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "grant", Title: "grant + revoke pairs on box", Unit: "pairs/s"}
	for _, c := range b.cfg.levels {
		lv, err := b.measure(ctx, clients(c, b.pairOp))
		if err != nil {
			return nil, err
		}
		s.Levels = append(s.Levels, lv)
	}
	best := peak(s.Levels)
	if b.cfg.engine == "postgres" {
		s.target("≥ 1,000 pairs/s on PostgreSQL", fmt.Sprintf("%.0f pairs/s", best), best >= 1000)
	} else {
		s.info("≥ 1,000 pairs/s (judged on PostgreSQL only)", fmt.Sprintf("%.0f pairs/s", best))
	}
	grants, revokes, err := b.auditCounts(ctx)
	if err != nil {
		return nil, err
	}
	wantGrants := b.grantsOK.Load() + int64(len(b.p.users))
	ok := grants >= wantGrants && revokes >= b.revokesOK.Load()
	s.target("every audit row present", fmt.Sprintf("grant rows %d for %d grants, revoke rows %d for %d revokes", grants, wantGrants, revokes, b.revokesOK.Load()), ok)
	s.errorsTarget()
	return s, nil
}

// auditCounts reads box's audit rows directly from its database.
func (b *bench) auditCounts(ctx context.Context) (grants, revokes int64, err error) {
	db, err := sqldb.Open(ctx, b.p.boxDB)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	rows, err := db.Query(ctx, `SELECT action, count(*) FROM entitlement_events GROUP BY action`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var action string
		var n int64
		if err := rows.Scan(&action, &n); err != nil {
			return 0, 0, err
		}
		switch action {
		case "grant":
			grants = n
		case "revoke":
			revokes = n
		}
	}
	return grants, revokes, rows.Err()
}

// gatewayRead: the authenticated read through the gateway against the
// same read through a stock httputil.ReverseProxy, and straight to
// identity, the three interleaved round by round.
func (b *bench) gatewayRead(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "gateway", Title: "gateway: authenticated read through the gateway", Unit: "req/s", BaselineName: "the same read through a stock httputil.ReverseProxy"}
	// The reference proxy tells what a stock hop costs on the machine at
	// hand (net/http's server and client and the loopback): the gateway is
	// judged on what its own work (token check, rate limit, log) adds.
	proxy, err := startProxy(ctx, b.dir, b.p.identity.URL)
	if err != nil {
		return nil, err
	}
	defer proxy.stop()
	var direct, stock, edge perRound
	var directTotal []Level
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.readOp(proxy.URL)), clients(c, b.readOp(b.p.gateway.URL)))
		if err != nil {
			return nil, err
		}
		directTotal = append(directTotal, total[0])
		s.Baseline = append(s.Baseline, total[1])
		s.Levels = append(s.Levels, total[2])
		direct, stock, edge = append(direct, byRound[0]), append(stock, byRound[1]), append(edge, byRound[2])
	}
	ratio := peakRatio(edge, stock)
	s.Ratio = ratio.median()
	s.medianTarget("≥ 90% of the stock proxy's throughput (peak over levels)", ratio, pct, func(r float64) bool { return r >= 0.9 })
	over := b.atLevel(1, edge, direct, func(x, y Level) float64 { return x.P50 - y.P50 })
	s.medianTarget("p50 overhead over direct ≤ 0.5 ms (1 client)", over, ms, func(v float64) bool { return v <= 0.5 })
	s.errorsTarget()
	s.info("reference: the stock proxy against direct reads (peak over levels)", peakRatio(stock, direct).figure(pct))
	perLevel := make([]string, len(directTotal))
	for i, l := range directTotal {
		perLevel[i] = fmt.Sprintf("%d: %.0f req/s", l.Concurrency, l.RPS)
	}
	s.Notes = append(s.Notes, "direct to identity, by clients: "+strings.Join(perLevel, ", "))
	return s, nil
}

func peak(ls []Level) float64 {
	best := 0.0
	for _, l := range ls {
		best = max(best, l.RPS)
	}
	return best
}

func levelAt(ls []Level, c int) (Level, bool) {
	for _, l := range ls {
		if l.Concurrency == c {
			return l, true
		}
	}
	return Level{}, false
}

func pct(r float64) string { return fmt.Sprintf("%.1f%%", r*100) }
func ms(v float64) string  { return fmt.Sprintf("%.2f ms", v) }
func mib(b int64) float64  { return float64(b) / (1 << 20) }
func errorsOf(ls []Level) int64 {
	var n int64
	for _, l := range ls {
		n += l.Errors
	}
	return n
}
