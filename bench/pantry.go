package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/pantry"
	pantrystore "github.com/platformco/platform/internal/pantry/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
)

// pantryProjects is how many projects the pantry scenarios seed (the
// figure of the registry's decisions).
const pantryProjects = 100_000

// pantryWords is the seeded projects' vocabulary: 1,000 made-up words
// of three syllables. A name is two words and a number, a description
// twelve words, so a one-word search matches about 0.2% of names and
// 1.2% of descriptions (about 1,400 of the 100,000 projects), as a
// specific word does in a real registry. A word in a fifth of every
// project (a vocabulary of 50) is the worst case bench/README.md records
// beside it.
var pantryWords = func() []string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	words := make([]string, 0, 1000)
	for i := 0; len(words) < 1000; i++ {
		w := ""
		for k, n := 0, i; k < 3; k, n = k+1, n/(len(cons)*len(vows)) {
			d := n % (len(cons) * len(vows))
			w += string(cons[d%len(cons)]) + string(vows[d/len(cons)])
		}
		words = append(words, w)
	}
	return words
}()

// pantryRig is a pantry process on a database holding pantryProjects
// projects.
type pantryRig struct {
	svc   *service
	drop  func()
	slugs []string
}

func (r *pantryRig) stop() {
	if r.svc != nil {
		r.svc.stop()
	}
	if r.drop != nil {
		r.drop()
	}
}

// startPantry migrates a fresh database, seeds it through pantry's own
// store (each project written as the API writes it, outbox row included,
// eight writers at once) and starts pantry on it as a real process.
func (b *bench) startPantry(ctx context.Context) (*pantryRig, error) {
	rig := &pantryRig{}
	dbURL, drop, err := freshDatabase(ctx, b.cfg, filepath.Join(b.dir, "pantry.db"), "pantry")
	if err != nil {
		return nil, err
	}
	rig.drop = drop
	if err := runOnce(ctx, b.p.bin, map[string]string{"DATABASE_URL": dbURL}, "pantry", "migrate"); err != nil {
		rig.stop()
		return nil, err
	}
	start := time.Now()
	if rig.slugs, err = seedPantry(ctx, dbURL, pantryProjects); err != nil {
		rig.stop()
		return nil, fmt.Errorf("seed pantry: %w", err)
	}
	fmt.Printf("bench: seeded %d projects in %s\n", pantryProjects, time.Since(start).Round(time.Second))
	port, err := freePort()
	if err != nil {
		rig.stop()
		return nil, err
	}
	env := map[string]string{"PORT": strconv.Itoa(port), "DATABASE_URL": dbURL}
	for k, v := range b.cfg.serviceEnv {
		env[k] = v
	}
	logPath := filepath.Join(b.dir, "pantry.log")
	if rig.svc, err = startReady(ctx, "pantry", port, logPath, b.p.bin, env, "pantry", "serve"); err != nil {
		rig.stop()
		return nil, err
	}
	return rig, nil
}

// seedPantry writes n public projects and returns their slugs.
func seedPantry(ctx context.Context, dbURL string, n int) ([]string, error) {
	db, err := sqldb.Open(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	store := pantrystore.New(db)
	slugs := make([]string, n)
	account := uuid.NewString()
	const writers = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			word := func() string { return pantryWords[rng.IntN(len(pantryWords))] }
			for i := w; i < n; i += writers {
				name := fmt.Sprintf("%s %s %d", word(), word(), i)
				desc := ""
				for range 12 {
					desc += word() + " "
				}
				p := pantry.Project{ID: uuid.NewString(), Slug: pantry.SlugFrom(name), Name: name, Summary: "A " + word() + " for " + word(),
					Description: desc, DescriptionHTML: "<p>" + desc + "</p>", Tags: []string{word()}, Uses: []string{"platform"},
					AccountID: account, Visibility: pantry.VisibilityPublic, Stars: int64(rng.IntN(500))}
				ev := pantry.Event{Type: pantry.EventProjectCreated, Subject: p.ID, Data: pantry.ProjectData{ProjectID: p.ID,
					AccountID: account, Slug: p.Slug, Name: name, Visibility: p.Visibility, Tags: p.Tags, Uses: p.Uses}}
				if err := store.CreateProject(ctx, p, ev); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("project %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				slugs[i] = p.Slug
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	// Statistics, as autovacuum keeps them on any database that has
	// grown to this size: without them PostgreSQL's planner estimates a
	// fresh table from its page count alone.
	if db.Engine == sqldb.Postgres {
		if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
			return nil, err
		}
	}
	return slugs, nil
}

// pantrySearchOp is one client searching one seeded word after another.
func (b *bench) pantrySearchOp(base string) func(i int) op {
	return func(i int) op {
		var k int
		return func(ctx context.Context) error {
			k++
			w := pantryWords[(i*7+k)%len(pantryWords)]
			return request{client: b.client, method: "GET", url: base + "/v1/projects?q=" + w, path: "/v1/projects", want: http.StatusOK}.do(ctx)
		}
	}
}

// pantryReadOp reads seeded projects by slug, each client its own walk.
func (b *bench) pantryReadOp(base string, slugs []string) func(i int) op {
	return func(i int) op {
		k := i * 7919
		return func(ctx context.Context) error {
			k++
			return request{client: b.client, method: "GET", url: base + "/v1/projects/" + slugs[k%len(slugs)], path: "/v1/projects/{slug}", want: http.StatusOK}.do(ctx)
		}
	}
}

// pantry: over 100,000 seeded projects, a full-text search at one client
// (p95, each round on its own) and a read by slug at 32 clients, the two
// interleaved round by round.
func (b *bench) pantry(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "pantry", Title: fmt.Sprintf("pantry: GET /v1/projects/{slug} over %d projects (search at one client on the side)", pantryProjects),
		Unit: "req/s", SideName: "full-text search GET /v1/projects?q=, one client"}
	rig, err := b.startPantry(ctx)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	base := rig.svc.URL
	total, byRound, err := b.interleaved(ctx, clients(1, b.pantrySearchOp(base)), clients(32, b.pantryReadOp(base, rig.slugs)))
	if err != nil {
		return nil, err
	}
	s.Side = append(s.Side, total[0])
	s.Levels = append(s.Levels, total[1])
	var p95, rps rounds
	for r := range byRound[0] {
		p95 = append(p95, byRound[0][r].P95)
		rps = append(rps, byRound[1][r].RPS)
	}
	s.medianTarget("search p95 ≤ 20 ms at one client", p95, ms, func(v float64) bool { return v <= 20 })
	if b.cfg.engine == "sqlite" {
		s.medianTarget("read by slug ≥ 5,000 req/s at 32 clients (SQLite)", rps, func(v float64) string { return fmt.Sprintf("%.0f req/s", v) },
			func(v float64) bool { return v >= 5000 })
	} else {
		s.medianFigure("read by slug at 32 clients (the target is SQLite's)", rps, func(v float64) string { return fmt.Sprintf("%.0f req/s", v) })
	}
	s.errorsTarget()
	return s, nil
}
