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

// measureAB measures a baseline and a target in alternating stretches
// (--rounds of each, the duration split between them) after warming both
// up, so a burst of noise on a shared machine falls on both.
func (b *bench) measureAB(ctx context.Context, base, target []op) (Level, Level, error) {
	if b.cfg.warmup > 0 {
		loop(base, b.cfg.warmup, 0)
		loop(target, b.cfg.warmup, 0)
	}
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	var br, tr []stretch
	for range b.cfg.rounds {
		if err := ctx.Err(); err != nil {
			return Level{}, Level{}, err
		}
		br = append(br, loop(base, d, 0))
		tr = append(tr, loop(target, d, 0))
	}
	return summarize(br...), summarize(tr...), ctx.Err()
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
// handler returning the same bytes, level by level (baseline first).
func (b *bench) read(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "read", Title: "authenticated read: GET /v1/accounts/{id} on identity", Unit: "req/s", BaselineName: "bare net/http handler, same bytes"}
	for _, c := range b.cfg.levels {
		base, lv, err := b.measureAB(ctx, clients(c, b.readOp(b.p.bare.URL)), clients(c, b.readOp(b.p.identity.URL)))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, base)
		s.Levels = append(s.Levels, lv)
	}
	s.Ratio = peak(s.Levels) / peak(s.Baseline)
	want := 0.25
	if b.cfg.engine == "postgres" {
		want = 0.15
	}
	s.target(fmt.Sprintf("≥ %.0f%% of baseline throughput (peak over levels)", want*100), pct(s.Ratio), s.Ratio >= want)
	if lv, ok := levelAt(s.Levels, 32); ok {
		// The bare handler's own p99 is the floor the machine and the load
		// generator set: the tail it shows is none of identity's doing.
		base, _ := levelAt(s.Baseline, 32)
		s.target("p99 ≤ 10 ms at 32 clients", fmt.Sprintf("%s (bare handler: %s)", ms(lv.P99), ms(base.P99)), lv.P99 <= 10)
	}
	s.errorsTarget()
	return s, nil
}

// login: POST /v1/session against raw argon2id hashes per second with
// identity's parameters, on as many goroutines as there are cores.
func (b *bench) login(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "login", Title: "login: POST /v1/session", Unit: "req/s", BaselineName: "raw argon2id hashes/s, same parameters"}
	p := identity.DefaultHashParams
	salt := []byte("0123456789abcdef")
	hash := func(int) error {
		argon2.IDKey([]byte(benchPassword), salt, p.Passes, p.MemoryKiB, p.Threads, 32)
		return nil
	}
	var hashes, hashSeconds float64
	for _, c := range b.cfg.levels {
		ops := clients(c, b.loginOp)
		if b.cfg.warmup > 0 {
			plainLoop(numCPU(), b.cfg.warmup, hash)
			loop(ops, b.cfg.warmup, 0)
		}
		d := b.cfg.duration / time.Duration(b.cfg.rounds)
		var runs []stretch
		for range b.cfg.rounds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, _ := plainLoop(numCPU(), d, hash)
			hashes += r * d.Seconds()
			hashSeconds += d.Seconds()
			runs = append(runs, loop(ops, d, 0))
		}
		s.Levels = append(s.Levels, summarize(runs...))
	}
	rate := hashes / hashSeconds
	s.BaselineRate = rate
	s.Ratio = peak(s.Levels) / rate
	s.target("≥ 90% of baseline (peak over levels)", pct(s.Ratio), s.Ratio >= 0.9)
	s.errorsTarget()
	s.Notes = append(s.Notes, fmt.Sprintf("baseline: %d goroutines hashing m=%d KiB, t=%d, p=%d", numCPU(), p.MemoryKiB, p.Passes, p.Threads))
	return s, nil
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
	}
	alone, during, loginLv := summarize(aloneRuns...), summarize(duringRuns...), summarize(loginRuns...)
	s.Baseline = []Level{alone}
	s.Levels = []Level{during}
	s.Side = []Level{loginLv}
	s.SideName = "logins during the flood"
	s.Ratio = during.RPS / alone.RPS
	s.target("reads keep ≥ 50% of their throughput", pct(s.Ratio), s.Ratio >= 0.5)
	s.target("no error (reads and logins)", strconv.FormatInt(during.Errors+loginLv.Errors+alone.Errors, 10), during.Errors+loginLv.Errors+alone.Errors == 0)
	return s, nil
}

// artifact: POST /v1/accounts/{id}/artifact_fetches through box, which
// asks identity about the caller's membership on every call.
func (b *bench) artifact(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "artifact", Title: "artifact check: POST …/artifact_fetches through box (identity round trip included)", Unit: "req/s", BaselineName: "authenticated read on identity"}
	for _, c := range b.cfg.levels {
		base, lv, err := b.measureAB(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.artifactOp))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, base)
		s.Levels = append(s.Levels, lv)
	}
	s.Ratio = peak(s.Levels) / peak(s.Baseline)
	s.target("≥ 35% of the authenticated read's throughput", pct(s.Ratio), s.Ratio >= 0.35)
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
// same read straight to identity.
func (b *bench) gatewayRead(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "gateway", Title: "gateway: authenticated read through the gateway", Unit: "req/s", BaselineName: "the same read straight to identity"}
	// The reference proxy is measured against direct reads too, in its own
	// stretches, so each run tells what a stock hop costs on the machine at
	// hand (net/http's server and client and the loopback), against which
	// the gateway's own work and its own transport are judged.
	proxy, err := startProxy(ctx, b.dir, b.p.identity.URL)
	if err != nil {
		return nil, err
	}
	defer proxy.stop()
	var ref, refBase []Level
	for _, c := range b.cfg.levels {
		base, lv, err := b.measureAB(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.readOp(b.p.gateway.URL)))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, base)
		s.Levels = append(s.Levels, lv)
		base, lv, err = b.measureAB(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.readOp(proxy.URL)))
		if err != nil {
			return nil, err
		}
		refBase, ref = append(refBase, base), append(ref, lv)
	}
	s.Ratio = peak(s.Levels) / peak(s.Baseline)
	s.target("≥ 60% of direct throughput", pct(s.Ratio), s.Ratio >= 0.6)
	if lv, ok := levelAt(s.Levels, 1); ok {
		base, _ := levelAt(s.Baseline, 1)
		over := lv.P50 - base.P50
		s.target("p50 overhead ≤ 0.5 ms (1 client)", ms(over), over <= 0.5)
	}
	s.errorsTarget()
	refOver := "n/a"
	if lv, ok := levelAt(ref, 1); ok {
		base, _ := levelAt(refBase, 1)
		refOver = ms(lv.P50 - base.P50)
	}
	s.info("reference: a bare httputil.ReverseProxy with net/http's transport, against direct reads",
		fmt.Sprintf("%s; p50 overhead %s (1 client)", pct(peak(ref)/peak(refBase)), refOver))
	perLevel := make([]string, len(ref))
	for i, l := range ref {
		perLevel[i] = fmt.Sprintf("%d: %.0f of %.0f req/s", l.Concurrency, l.RPS, refBase[i].RPS)
	}
	s.Notes = append(s.Notes, "reference proxy (no token check, rate limit or log), by clients: "+strings.Join(perLevel, ", "))
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
