package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/pantry/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const account = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"

func open(t *testing.T, engine sqldb.Engine) (*sqldb.DB, *sqlstore.Store) {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	return db, sqlstore.New(db)
}

// project returns a valid project named name.
func project(slug, name string, mods ...func(*pantry.Project)) pantry.Project {
	p := pantry.Project{ID: ids.New(), Slug: slug, Name: name, AccountID: account, Visibility: pantry.VisibilityPublic,
		Tags: []string{}, Uses: []string{}}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func create(t *testing.T, s *sqlstore.Store, p pantry.Project) pantry.Project {
	t.Helper()
	ev := pantry.Event{Type: pantry.EventProjectCreated, Subject: p.ID, Data: map[string]string{"project_id": p.ID}}
	if err := s.CreateProject(context.Background(), p, ev); err != nil {
		t.Fatalf("create %s: %v", p.Slug, err)
	}
	got, _, err := s.ProjectBySlug(context.Background(), p.Slug)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func update(s *sqlstore.Store, p pantry.Project) error {
	return s.UpdateProject(context.Background(), p, pantry.Event{Type: pantry.EventProjectUpdated, Subject: p.ID, Data: map[string]string{}})
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := errs.Code(err); got != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}

func slugs(ps []pantry.Project) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Slug)
	}
	return out
}

func TestProjectsSlugsAndEvents(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		p := create(t, s, project("kettle", "Kettle", func(p *pantry.Project) {
			p.Tags, p.Uses, p.HomepageURL = []string{"cli", "go"}, []string{"identity", "kit"}, "https://kettle.example"
		}))
		if !slices.Equal(p.Tags, []string{"cli", "go"}) || !slices.Equal(p.Uses, []string{"identity", "kit"}) || p.Version != 1 {
			t.Fatalf("read back %+v", p)
		}
		wantCode(t, s.CreateProject(ctx, project("kettle", "Other"), pantry.Event{Type: "x", Subject: "y", Data: 1}), pantry.CodeSlugTaken)

		// A rename keeps the old slug answering, moved, and reserved.
		p.Slug, p.Name = "kettle-two", "Kettle Two"
		if err := update(s, p); err != nil {
			t.Fatal(err)
		}
		got, moved, err := s.ProjectBySlug(ctx, "kettle")
		if err != nil || !moved || got.Slug != "kettle-two" || got.Version != 2 {
			t.Fatalf("old slug: %+v moved=%v err=%v", got, moved, err)
		}
		wantCode(t, s.CreateProject(ctx, project("kettle", "Third"), pantry.Event{Type: "x", Subject: "y", Data: 1}), pantry.CodeSlugTaken)
		// A stale version is a conflict, not a lost write.
		wantCode(t, update(s, p), pantry.CodeConflict)
		// Renaming back to its own former slug is allowed.
		got.Slug = "kettle"
		if err := update(s, got); err != nil {
			t.Fatal(err)
		}
		other := create(t, s, project("pot", "Pot"))
		other.Slug = "kettle-two"
		wantCode(t, update(s, other), pantry.CodeSlugTaken)

		if err := s.DeleteProject(ctx, p.ID, pantry.Event{Type: pantry.EventProjectDeleted, Subject: p.ID, Data: 1}); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.ProjectBySlug(ctx, "kettle-two")
		wantCode(t, err, pantry.CodeNotFound)
		wantCode(t, s.DeleteProject(ctx, p.ID, pantry.Event{Type: "x", Subject: "y", Data: 1}), pantry.CodeNotFound)
		create(t, s, project("kettle-two", "Reborn")) // the slugs are free again

		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE source = 'pantry'`).Scan(&n); err != nil || n != 6 {
			t.Fatalf("outbox rows = %d (%v), want 6", n, err)
		}
	})
}

func TestDatabaseRefusesWhatTheRulesRefuse(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		p := create(t, s, project("rules", "Rules"))
		for name, stmt := range map[string]string{
			"http homepage":  `UPDATE projects SET homepage_url = 'http://x.example' WHERE id = $1`,
			"visibility":     `UPDATE projects SET visibility = 'secret' WHERE id = $1`,
			"negative stars": `UPDATE projects SET stars = -1 WHERE id = $1`,
			"short slug":     `UPDATE projects SET slug = 'ab' WHERE id = $1`,
			"star nothing":   `INSERT INTO stars (project_id, user_id, created_at) VALUES ('` + ids.New() + `', $1, CURRENT_TIMESTAMP)`,
		} {
			if _, err := db.Exec(ctx, stmt, p.ID); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
}

func TestStarsExactUnderRaces(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		p := create(t, s, project("popular", "Popular"))
		users := make([]string, 100)
		for i := range users {
			users[i] = ids.New()
		}
		var wg sync.WaitGroup
		errc := make(chan error, 200)
		for _, u := range users {
			wg.Add(2)
			go func() { defer wg.Done(); _, err := s.Star(ctx, p.ID, u); errc <- err }()
			go func() { defer wg.Done(); _, err := s.Star(ctx, p.ID, u); errc <- err }() // the same user twice
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, _, _ := s.ProjectBySlug(ctx, "popular")
		if got.Stars != 100 {
			t.Fatalf("stars = %d, want 100", got.Stars)
		}
		n, err := s.Unstar(ctx, p.ID, users[0])
		if err != nil || n != 99 {
			t.Fatalf("unstar = %d, %v", n, err)
		}
		if n, _ := s.Unstar(ctx, p.ID, users[0]); n != 99 {
			t.Fatalf("second unstar = %d", n)
		}
		mine, err := s.StarredBy(ctx, users[1], 10)
		if err != nil || len(mine) != 1 || mine[0].ID != p.ID {
			t.Fatalf("starred by = %v, %v", slugs(mine), err)
		}
		_, err = s.Star(ctx, ids.New(), users[0])
		wantCode(t, err, pantry.CodeNotFound)
	})
}

func list(t *testing.T, s *sqlstore.Store, q pantry.Query) pantry.Page {
	t.Helper()
	q, err := pantry.CheckQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.ListProjects(context.Background(), q)
	if err != nil {
		t.Fatalf("list %+v: %v", q, err)
	}
	return page
}

func TestListSortsPagesAndFilters(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		for i, name := range []string{"Delta", "alpha", "Charlie", "bravo", "Echo"} {
			p := create(t, s, project(strings.ToLower(name), name, func(p *pantry.Project) {
				if i%2 == 0 {
					p.Tags, p.Uses = []string{"even"}, []string{"kit"}
				} else {
					p.Tags = []string{"odd"}
				}
			}))
			for range i {
				if _, err := s.Star(ctx, p.ID, ids.New()); err != nil {
					t.Fatal(err)
				}
			}
		}
		create(t, s, project("hidden", "Hidden", func(p *pantry.Project) { p.Visibility = pantry.VisibilityUnlisted; p.Tags = []string{"even"} }))

		walk := func(q pantry.Query) []string {
			var out []string
			for {
				page := list(t, s, q)
				out = append(out, slugs(page.Projects)...)
				if page.Next == "" {
					return out
				}
				q.Cursor = page.Next
			}
		}
		for _, tc := range []struct {
			q    pantry.Query
			want []string
		}{
			{pantry.Query{Limit: 2}, []string{"echo", "bravo", "charlie", "alpha", "delta"}},
			{pantry.Query{Sort: "name", Limit: 2}, []string{"alpha", "bravo", "charlie", "delta", "echo"}},
			{pantry.Query{Sort: "stars", Limit: 2}, []string{"echo", "bravo", "charlie", "alpha", "delta"}},
			{pantry.Query{Tag: "even", Limit: 1}, []string{"echo", "charlie", "delta"}},
			{pantry.Query{Uses: "kit", Sort: "name"}, []string{"charlie", "delta", "echo"}},
		} {
			if got := walk(tc.q); !slices.Equal(got, tc.want) {
				t.Errorf("%+v: got %v, want %v", tc.q, got, tc.want)
			}
		}
		tags, err := s.Tags(ctx)
		if err != nil || !slices.Equal(tags, []pantry.TagCount{{Tag: "even", Count: 3}, {Tag: "odd", Count: 2}}) {
			t.Fatalf("tags = %v, %v", tags, err)
		}
		q, _ := pantry.CheckQuery(pantry.Query{Sort: "name", Cursor: "bm90IGEgY3Vyc29y"})
		_, err = s.ListProjects(ctx, q)
		wantCode(t, err, pantry.CodeValidation)
	})
}

func TestSearchRanksNameAboveDescription(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		create(t, s, project("described", "Described", func(p *pantry.Project) {
			p.Description = strings.Repeat("A toolkit for telescopes. Telescope mounts and telescope lenses. ", 20)
		}))
		create(t, s, project("telescope", "Telescope"))
		create(t, s, project("summarised", "Summarised", func(p *pantry.Project) { p.Summary = "Point your telescope" }))
		create(t, s, project("unrelated", "Unrelated", func(p *pantry.Project) { p.Description = "nothing to see" }))
		create(t, s, project("secret-scope", "Telescope secret", func(p *pantry.Project) { p.Visibility = pantry.VisibilityUnlisted }))

		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"telescope", []string{"telescope", "summarised", "described"}},
			{"telescopes", []string{"telescope", "summarised", "described"}}, // stemmed on both engines
			{`"telescope mounts"`, []string{"described"}},
			{"telescope -lenses", []string{"telescope", "summarised"}},
			{"unrelated or summarised", []string{"unrelated", "summarised"}},
			{"nothing-here", []string{}},
		} {
			got := slugs(list(t, s, pantry.Query{Q: tc.q}).Projects)
			if len(got) > 1 && got[0] == "telescope" || tc.q == "unrelated or summarised" {
				// The name match first; the engines may weigh a summary
				// and a longer description differently after it.
				slices.Sort(got)
				slices.Sort(tc.want)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("q=%q: got %v, want %v", tc.q, got, tc.want)
			}
		}
		// Relevance pages by offset.
		page := list(t, s, pantry.Query{Q: "telescope", Limit: 2})
		next := list(t, s, pantry.Query{Q: "telescope", Limit: 2, Cursor: page.Next})
		got := append(slugs(page.Projects), slugs(next.Projects)...)
		if len(got) != 3 || got[0] != "telescope" || next.Next != "" ||
			!slices.Equal(slices.Sorted(slices.Values(got)), []string{"described", "summarised", "telescope"}) {
			t.Fatalf("pages = %v (next %q)", got, next.Next)
		}
	})
}

// TestSearchIndexFollowsVisibility: the search index holds public
// projects only (decision 0028), through every write that changes what
// it holds, and the filters apply within relevance order.
func TestSearchIndexFollowsVisibility(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		search := func(q pantry.Query) []string {
			t.Helper()
			return slugs(list(t, s, q).Projects)
		}
		hidden := create(t, s, project("hidden-lantern", "Hidden lantern", func(p *pantry.Project) { p.Visibility = pantry.VisibilityUnlisted }))
		shown := create(t, s, project("paper-lantern", "Paper lantern", func(p *pantry.Project) {
			p.Tags, p.Uses = []string{"light"}, []string{"kit"}
		}))
		create(t, s, project("lantern-guide", "Guide", func(p *pantry.Project) {
			p.Description, p.Tags, p.Uses = "How to hang a lantern", []string{"light"}, []string{"identity"}
		}))

		steps := []struct {
			name  string
			write func() error
			q     pantry.Query
			want  []string
		}{
			{"unlisted never listed", nil, pantry.Query{Q: "lantern"}, []string{"paper-lantern", "lantern-guide"}},
			{"made public", func() error { hidden.Visibility = pantry.VisibilityPublic; return update(s, hidden) },
				pantry.Query{Q: "hidden"}, []string{"hidden-lantern"}},
			{"renamed while public", func() error { hidden.Name = "Hidden candle"; return update(s, hidden) },
				pantry.Query{Q: "candle"}, []string{"hidden-lantern"}},
			{"the old name is gone", nil, pantry.Query{Q: "hidden lantern"}, []string{}},
			{"unlisted again", func() error { hidden.Visibility = pantry.VisibilityUnlisted; return update(s, hidden) },
				pantry.Query{Q: "candle"}, []string{}},
			{"renamed while unlisted", func() error { hidden.Name = "Hidden torch"; return update(s, hidden) },
				pantry.Query{Q: "torch"}, []string{}},
			{"public with the new name", func() error { hidden.Visibility = pantry.VisibilityPublic; return update(s, hidden) },
				pantry.Query{Q: "torch"}, []string{"hidden-lantern"}},
			{"tag within relevance", nil, pantry.Query{Q: "lantern", Tag: "light"}, []string{"paper-lantern", "lantern-guide"}},
			{"use within relevance", nil, pantry.Query{Q: "lantern", Uses: "identity"}, []string{"lantern-guide"}},
			{"tag and use", nil, pantry.Query{Q: "lantern", Tag: "light", Uses: "kit"}, []string{"paper-lantern"}},
			{"search sorted by name", nil, pantry.Query{Q: "lantern", Sort: pantry.SortName}, []string{"lantern-guide", "paper-lantern"}},
			{"deleted", func() error {
				return s.DeleteProject(ctx, shown.ID, pantry.Event{Type: pantry.EventProjectDeleted, Subject: shown.ID, Data: map[string]string{}})
			}, pantry.Query{Q: "lantern"}, []string{"lantern-guide"}},
		}
		for _, st := range steps {
			if st.write != nil {
				if err := st.write(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				got, _, err := s.ProjectBySlug(ctx, hidden.Slug)
				if err != nil {
					t.Fatal(err)
				}
				hidden = got
			}
			if got := search(st.q); !slices.Equal(got, st.want) {
				t.Errorf("%s: %+v found %v, want %v", st.name, st.q, got, st.want)
			}
		}
		if engine == sqldb.SQLite {
			// FTS5 checks its index against its content, the view of
			// public rows.
			if _, err := db.Exec(ctx, `INSERT INTO projects_fts (projects_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
				t.Fatalf("FTS5 integrity-check: %v", err)
			}
		}
	})
}

// FuzzSearch: no search text that passes the query's rules makes either
// engine fail, whatever FTS5 or tsquery syntax it holds.
func FuzzSearch(f *testing.F) {
	for _, seed := range []string{`"`, `a"b`, `-`, `--x`, `NEAR(a b)`, `name:x`, `{name}:x`, `a AND`, `OR`, `or or`, `*`, `a*`,
		`(`, `)`, `^x`, `'`, `a & b | !c`, `a <-> b`, `a:*`, `\`, `""`, `" "`, `-"x"`, `+x`, `x:`, `:`, `NOT`, `a NOT`, "é ü", "東京",
		`%`, `_`, `$1`, `;DROP TABLE projects`, `a b c d e f g`} {
		f.Add(seed)
	}
	type target struct {
		s    *sqlstore.Store
		name string
	}
	var targets []target
	for _, engine := range sqltest.Engines() {
		db := sqltest.Open(f, engine, sqlstore.Migrations)
		s := sqlstore.New(db)
		ev := pantry.Event{Type: pantry.EventProjectCreated, Subject: "x", Data: 1}
		for i, name := range []string{"Alpha tool", "Beta near", "Gamma or not"} {
			p := project(fmt.Sprintf("fuzz-%d", i), name, func(p *pantry.Project) { p.Description = "and or not near * name summary" })
			if err := s.CreateProject(context.Background(), p, ev); err != nil {
				f.Fatal(err)
			}
		}
		targets = append(targets, target{s, string(engine)})
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := pantry.CheckQuery(pantry.Query{Q: text})
		if err != nil {
			return // refused with a 422 before any engine sees it
		}
		for _, tg := range targets {
			if _, err := tg.s.ListProjects(context.Background(), q); err != nil {
				t.Fatalf("%s: q=%q: %v", tg.name, text, err)
			}
		}
	})
}
