package sqlstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestMembersPaginationUnderInserts pages through an account's members
// while others join: every member present at the start is served exactly
// once, and no member is served twice.
func TestMembersPaginationUnderInserts(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.User(t, "owner@example.com")
		team := env.Team(t, owner, "Paging Team")
		before := map[string]bool{owner.User.ID: true}
		for i := 0; i < 20; i++ {
			env.Clock.Advance(time.Millisecond)
			p := env.User(t, fmt.Sprintf("m%02d@example.com", i))
			env.Join(t, team, p, identity.RoleMember)
			before[p.User.ID] = true
		}
		// Newcomers register first; they join while the pages are read.
		var newcomers []identity.Principal
		for i := 0; i < 10; i++ {
			newcomers = append(newcomers, env.User(t, fmt.Sprintf("n%02d@example.com", i)))
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range newcomers {
				env.Clock.Advance(time.Millisecond)
				env.Join(t, team, p, identity.RoleMember)
			}
		}()

		seen := map[string]int{}
		page := identity.PageRequest{Limit: 7}
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("pagination does not end")
			}
			members, next, err := env.Service.ListMembers(ctx, env.For(t, owner, team.Account.ID), page)
			if err != nil {
				t.Fatal(err)
			}
			if len(members) > page.Limit {
				t.Fatalf("page of %d items, limit %d", len(members), page.Limit)
			}
			for _, m := range members {
				seen[m.UserID]++
			}
			if next == nil {
				break
			}
			// The cursor survives its opaque encoding.
			page, err = identity.ParsePage(next.Encode(), "7")
			if err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for id := range before {
			if seen[id] != 1 {
				t.Errorf("member %s served %d times, want once", id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("member %s served %d times", id, n)
			}
		}
	})
}

func TestParsePage(t *testing.T) {
	tests := []struct {
		cursor, limit string
		wantLimit     int
		wantErr       bool
	}{
		{"", "", identity.DefaultPageSize, false},
		{"", "1", 1, false},
		{"", "200", 200, false},
		{"", "201", 0, true},
		{"", "0", 0, true},
		{"", "ten", 0, true},
		{"not-a-cursor", "", 0, true},
		{identity.Cursor{At: time.Now(), ID: "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d"}.Encode(), "5", 5, false},
	}
	for _, tt := range tests {
		p, err := identity.ParsePage(tt.cursor, tt.limit)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePage(%q, %q) err = %v, wantErr %v", tt.cursor, tt.limit, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && p.Limit != tt.wantLimit {
			t.Errorf("ParsePage(%q, %q) limit = %d, want %d", tt.cursor, tt.limit, p.Limit, tt.wantLimit)
		}
	}
}
