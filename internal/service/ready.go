package service

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/platformco/platform/internal/httpx"
)

// ErrMigrationsPending is a check's answer while the database's schema is
// behind: readiness says so (a migrate fixes it; waiting does not).
var ErrMigrationsPending = errors.New("migrations pending")

// DefaultCheckBound bounds a check registered without its own bound.
const DefaultCheckBound = 2 * time.Second

// Check is one named dependency of readiness.
type Check struct {
	Name string
	// Check answers nil while the dependency is usable.
	Check func(ctx context.Context) error
	// Bound is how long Check may take before the dependency counts as
	// unavailable; DefaultCheckBound when 0.
	Bound time.Duration
	// Optional dependencies do not make the service unready; a renderer
	// may still name them (the gateway's "degraded").
	Optional bool
}

// Result is one check's outcome.
type Result struct {
	Name     string
	Err      error
	Optional bool
}

// Results are every check's outcome, in the order they were added.
type Results []Result

// Ready reports whether every required check passed.
func (rs Results) Ready() bool {
	for _, r := range rs {
		if r.Err != nil && !r.Optional {
			return false
		}
	}
	return true
}

// Get returns the outcome of the check named name.
func (rs Results) Get(name string) (Result, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}

// Render turns the results into the body a service documents.
type Render func(Results) any

// Readiness runs named checks at once, each within its bound, and answers
// 200 or 503 with the body its Render draws from the results. The reason a
// check failed is logged (once per outage), never answered.
type Readiness struct {
	mu     sync.Mutex
	checks []Check
	down   map[string]bool
	render Render
	logger *slog.Logger
}

// NewReadiness returns readiness without checks, rendered by render.
func NewReadiness(render Render, logger *slog.Logger) *Readiness {
	return &Readiness{render: render, logger: logger, down: map[string]bool{}}
}

// Add registers a check; a service adds them while it starts.
func (r *Readiness) Add(c Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, c)
}

// Run runs every check and returns the results.
func (r *Readiness) Run(ctx context.Context) Results {
	r.mu.Lock()
	checks := append([]Check(nil), r.checks...)
	r.mu.Unlock()
	res := make(Results, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			bound := c.Bound
			if bound <= 0 {
				bound = DefaultCheckBound
			}
			ctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			res[i] = Result{Name: c.Name, Err: c.Check(ctx), Optional: c.Optional}
		})
	}
	wg.Wait()
	r.log(ctx, res)
	return res
}

// log says when a dependency becomes unavailable and when it answers
// again, not on every probe.
func (r *Readiness) log(ctx context.Context, res Results) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range res {
		switch {
		case c.Err != nil && !r.down[c.Name]:
			r.down[c.Name] = true
			r.logger.WarnContext(ctx, "readiness: dependency unavailable", "dep", c.Name, "err", c.Err.Error())
		case c.Err == nil && r.down[c.Name]:
			delete(r.down, c.Name)
			r.logger.InfoContext(ctx, "readiness: dependency available again", "dep", c.Name)
		}
	}
}

// Probe is the readiness a service's /readyz serves (httpx.Readyz).
func (r *Readiness) Probe(ctx context.Context) httpx.Readiness {
	res := r.Run(ctx)
	return httpx.Readiness{Ready: res.Ready(), Body: r.render(res)}
}

// Handler serves /readyz.
func (r *Readiness) Handler() http.Handler { return httpx.Readyz(r.Probe) }

// state is a dependency's word in a body.
func state(err error) string {
	if err != nil {
		return "unavailable"
	}
	return "ok"
}

// DepsBody is identity's documented body, which box and courier share:
// {"status":"ok","deps":ENGINE} when ready; {"status":"unavailable",
// "deps":ENGINE} when not, with "migrations":"pending" while the schema is
// behind; {"status":"ok","deps":"none"} without a database (parlor's). The
// database is the check named "database"; deps names the engine, engine.
func DepsBody(engine string) Render {
	return func(rs Results) any {
		db, ok := rs.Get(CheckDatabase)
		if !ok {
			return map[string]string{"status": "ok", "deps": "none"}
		}
		body := map[string]string{"status": "ok", "deps": engine}
		if !rs.Ready() {
			body["status"] = "unavailable"
		}
		if errors.Is(db.Err, ErrMigrationsPending) {
			body["migrations"] = "pending"
		}
		return body
	}
}

// NamedDeps is the body that names each dependency, as keyholder and the
// gateway answer: {"status":S,"deps":{NAME:"ok"|"unavailable",…}} plus
// extra's fields. S is "ok", "unavailable" when a required check failed,
// or "degraded" when only optional ones did; "migrations":"pending" while
// the database's schema is behind.
func NamedDeps(extra map[string]string) Render {
	return func(rs Results) any {
		deps := make(map[string]string, len(rs))
		status := "ok"
		body := map[string]any{}
		for k, v := range extra {
			body[k] = v
		}
		for _, r := range rs {
			deps[r.Name] = state(r.Err)
			if r.Err != nil && status == "ok" {
				status = "degraded"
			}
			if errors.Is(r.Err, ErrMigrationsPending) {
				body["migrations"] = "pending"
			}
		}
		if !rs.Ready() {
			status = "unavailable"
		}
		body["status"], body["deps"] = status, deps
		return body
	}
}

// ChecksBody is billing's documented body: {"status":"ok"|"error",
// "checks":{NAME:"ok"|"error",…}}.
func ChecksBody(rs Results) any {
	checks := make(map[string]string, len(rs))
	for _, r := range rs {
		checks[r.Name] = "ok"
		if r.Err != nil {
			checks[r.Name] = "error"
		}
	}
	status := "ok"
	if !rs.Ready() {
		status = "error"
	}
	return map[string]any{"status": status, "checks": checks}
}
