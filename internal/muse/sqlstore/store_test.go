package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/muse/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const (
	account = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	other   = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
)

func open(t *testing.T, engine sqldb.Engine) (*sqldb.DB, *sqlstore.Store) {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	return db, sqlstore.New(db)
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := errs.Code(err); got != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}

func credential(t *testing.T, s *sqlstore.Store, accountID, name string) muse.Credential {
	t.Helper()
	c := muse.Credential{ID: ids.New(), AccountID: accountID, Provider: muse.ProviderOpenAI, Name: name,
		BaseURL: "http://127.0.0.1:9", Sealed: []byte{1, 2, 3}, LastFour: "wxyz"}
	if err := s.CreateCredential(context.Background(), c); err != nil {
		t.Fatalf("create credential %s: %v", name, err)
	}
	return c
}

func usage(accountID, alias string, prompt, completion int64, at time.Time) muse.Usage {
	return muse.Usage{ID: ids.New(), AccountID: accountID, Caller: "key_0011223344556677", Alias: alias, Provider: "openai",
		UpstreamModel: "gpt-4o-mini", PromptTokens: prompt, CompletionTokens: completion, LatencyMS: 12,
		Status: muse.StatusOK, CreatedAt: at}
}

func event(u muse.Usage) muse.Event {
	return muse.Event{Type: muse.EventTokensConsumed, Subject: "platform", Data: muse.TokensConsumed{AccountID: u.AccountID,
		Alias: u.Alias, Provider: u.Provider, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens}}
}

func TestVaultAliasesBudgetsUsage(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		a := credential(t, s, account, "primary")
		b := credential(t, s, account, "secondary")
		platform := credential(t, s, "", "platform-openai")
		credential(t, s, other, "primary") // names are per account
		wantCode(t, s.CreateCredential(ctx, muse.Credential{ID: ids.New(), AccountID: account, Provider: "openai", Name: "primary",
			Sealed: []byte{1}, LastFour: "abcd"}), muse.CodeNameTaken)
		wantCode(t, s.CreateCredential(ctx, muse.Credential{ID: ids.New(), Provider: "anthropic", Name: "platform-openai",
			Sealed: []byte{1}, LastFour: "abcd"}), muse.CodeNameTaken)

		got, err := s.Credential(ctx, a.ID)
		if err != nil || got.AccountID != account || got.LastFour != "wxyz" || string(got.Sealed) != "\x01\x02\x03" {
			t.Fatalf("Credential = %+v, %v", got, err)
		}
		list, err := s.Credentials(ctx, account)
		if err != nil || len(list) != 2 || list[0].Name != "primary" || list[1].Name != "secondary" {
			t.Fatalf("Credentials = %+v, %v", list, err)
		}
		if list, err := s.Credentials(ctx, ""); err != nil || len(list) != 1 || list[0].ID != platform.ID || list[0].AccountID != "" {
			t.Fatalf("platform Credentials = %+v, %v", list, err)
		}

		// Targets keep their order and weights; a put replaces them.
		targets := []muse.Target{{CredentialID: b.ID, Model: "m-b", Weight: 3}, {CredentialID: a.ID, Model: "m-a"},
			{CredentialID: platform.ID, Model: "m-p", Weight: 1}}
		if err := s.PutAlias(ctx, muse.Alias{AccountID: account, Name: "fast", Targets: targets}); err != nil {
			t.Fatal(err)
		}
		al, err := s.Alias(ctx, account, "fast")
		if err != nil || fmt.Sprint(al.Targets) != fmt.Sprint(targets) {
			t.Fatalf("Alias = %+v, %v", al, err)
		}
		if err := s.PutAlias(ctx, muse.Alias{AccountID: account, Name: "fast", Targets: targets[1:2]}); err != nil {
			t.Fatal(err)
		}
		if al, _ := s.Alias(ctx, account, "fast"); len(al.Targets) != 1 || al.Targets[0].CredentialID != a.ID {
			t.Fatalf("after replace: %+v", al)
		}
		wantCode(t, s.PutAlias(ctx, muse.Alias{AccountID: account, Name: "ghost",
			Targets: []muse.Target{{CredentialID: ids.New(), Model: "m"}}}), muse.CodeValidation)
		if _, err := s.Alias(ctx, account, "ghost"); errs.Code(err) != muse.CodeNotFound {
			t.Fatalf("a refused alias was written: %v", err)
		}
		_, err = s.Alias(ctx, other, "fast")
		wantCode(t, err, muse.CodeNotFound)

		// A credential an alias routes to stays until the alias lets go.
		wantCode(t, s.DeleteCredential(ctx, account, a.ID), muse.CodeCredentialInUse)
		wantCode(t, s.DeleteCredential(ctx, other, b.ID), muse.CodeNotFound)
		wantCode(t, s.DeleteCredential(ctx, "", b.ID), muse.CodeNotFound)
		if err := s.DeleteCredential(ctx, account, b.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteAlias(ctx, account, "fast"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.DeleteAlias(ctx, account, "fast"), muse.CodeNotFound)
		if err := s.DeleteCredential(ctx, account, a.ID); err != nil {
			t.Fatal(err)
		}
		if as, err := s.Aliases(ctx, account); err != nil || len(as) != 0 {
			t.Fatalf("Aliases = %v, %v", as, err)
		}

		// Budgets and the month's total.
		if b, err := s.Budget(ctx, account, "2026-12"); err != nil || b != (muse.Budget{}) {
			t.Fatalf("no budget: %+v, %v", b, err)
		}
		if err := s.SetBudget(ctx, account, 1000); err != nil {
			t.Fatal(err)
		}
		dec := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
		for _, u := range []muse.Usage{usage(account, "fast", 10, 20, dec), usage(account, "fast", 1, 2, dec.Add(time.Hour)),
			usage(account, "smart", 5, 5, dec.Add(24*time.Hour)), usage(account, "fast", 100, 100, dec.AddDate(0, -1, 0)),
			usage(other, "fast", 7, 7, dec)} {
			if err := s.RecordUsage(ctx, u, event(u)); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := s.Budget(ctx, account, "2026-12"); err != nil || b != (muse.Budget{Monthly: 1000, Used: 43}) {
			t.Fatalf("Budget = %+v, %v", b, err)
		}
		if err := s.SetBudget(ctx, account, 0); err != nil {
			t.Fatal(err)
		}
		if b, _ := s.Budget(ctx, account, "2026-12"); b != (muse.Budget{Used: 43}) {
			t.Fatalf("removed budget: %+v", b)
		}
		sums, err := s.UsageSums(ctx, account, dec.AddDate(0, 0, -7), dec.AddDate(0, 0, 7))
		want := "[{2026-12-07 fast 2 11 22} {2026-12-08 smart 1 5 5}]"
		if err != nil || fmt.Sprint(sums) != want {
			t.Fatalf("UsageSums = %v, %v; want %s", sums, err, want)
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE source = 'muse' AND type = 'muse.tokens.consumed'`).Scan(&n); err != nil || n != 5 {
			t.Fatalf("outbox rows = %d, %v; want 5", n, err)
		}
	})
}

// TestPlan reads a completion's budget, alias and credentials at once.
func TestPlan(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		a := credential(t, s, account, "primary")
		platform := credential(t, s, "", "platform-openai")
		targets := []muse.Target{{CredentialID: platform.ID, Model: "m-p", Weight: 2}, {CredentialID: a.ID, Model: "m-a"},
			{CredentialID: a.ID, Model: "m-a2", Weight: 1}}
		if err := s.PutAlias(ctx, muse.Alias{AccountID: account, Name: "fast", Targets: targets}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetBudget(ctx, account, 500); err != nil {
			t.Fatal(err)
		}
		dec := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
		for _, u := range []muse.Usage{usage(account, "fast", 10, 20, dec), usage(account, "fast", 1, 2, dec)} {
			if err := s.RecordUsage(ctx, u, event(u)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			name, account, alias string
			found                bool
			budget               muse.Budget
			targets              []muse.Target
		}{
			{"Alias", account, "fast", true, muse.Budget{Monthly: 500, Used: 33}, targets},
			{"NoAlias", account, "slow", false, muse.Budget{Monthly: 500, Used: 33}, nil},
			{"OtherAccount", other, "fast", false, muse.Budget{}, nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p, err := s.Plan(ctx, tt.account, "2026-12", tt.alias)
				if err != nil || p.Found != tt.found || p.Budget != tt.budget || len(p.Alias.Targets) != len(tt.targets) {
					t.Fatalf("Plan = %+v, %v", p, err)
				}
				for i, target := range tt.targets {
					if p.Alias.Targets[i] != target {
						t.Fatalf("target %d = %+v, want %+v", i, p.Alias.Targets[i], target)
					}
					c := p.Credentials[target.CredentialID]
					if c.ID != target.CredentialID || c.Provider != muse.ProviderOpenAI || c.BaseURL != "http://127.0.0.1:9" ||
						string(c.Sealed) != "\x01\x02\x03" || c.Name == "" {
						t.Fatalf("credential %d = %+v", i, c)
					}
				}
			})
		}
	})
}

// TestBudgetSumsTheStripes reads a month kept in several stripes as their
// sum, and only that account's and month's.
func TestBudgetSumsTheStripes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		for _, r := range []struct {
			account, month string
			stripe, tokens int64
		}{{account, "2026-12", 0, 5}, {account, "2026-12", 7, 30}, {account, "2026-12", 15, 100},
			{account, "2026-11", 3, 1000}, {other, "2026-12", 7, 10000}} {
			if _, err := db.Exec(ctx, `INSERT INTO usage_months (account_id, month, stripe, tokens) VALUES ($1, $2, $3, $4)`,
				r.account, r.month, r.stripe, r.tokens); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(ctx, `INSERT INTO usage_months (account_id, month, stripe, tokens) VALUES ($1, '2026-10', 16, 1)`,
			account); err == nil {
			t.Fatal("a stripe beyond 15 was written")
		}
		for _, c := range []struct {
			account, month string
			want           int64
		}{{account, "2026-12", 135}, {account, "2026-11", 1000}, {other, "2026-12", 10000}, {other, "2026-11", 0}} {
			if b, err := s.Budget(ctx, c.account, c.month); err != nil || b.Used != c.want {
				t.Errorf("Budget(%s, %s) = %+v, %v; want %d used", c.account, c.month, b, err, c.want)
			}
		}
	})
}

// TestDatabaseKeepsTheInvariants races writers on one account: the month's
// total stays the sum of the usage rows (each with its outbox row), usage
// rows are never changed, and no alias ever routes to a credential that
// was deleted under it.
func TestDatabaseKeepsTheInvariants(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		const writers = 24
		now := time.Now().UTC()
		creds := make([]muse.Credential, writers)
		for i := range creds {
			creds[i] = credential(t, s, account, fmt.Sprintf("c%d", i))
		}
		var wg sync.WaitGroup
		outcomes := make([][2]error, writers)
		for i := range writers {
			wg.Add(3)
			go func() {
				defer wg.Done()
				u := usage(account, "fast", int64(i+1), int64(2*i), now)
				if err := s.RecordUsage(ctx, u, event(u)); err != nil {
					t.Errorf("RecordUsage %d: %v", i, err)
				}
			}()
			go func() {
				defer wg.Done()
				outcomes[i][0] = s.PutAlias(ctx, muse.Alias{AccountID: account, Name: fmt.Sprintf("a%d", i),
					Targets: []muse.Target{{CredentialID: creds[i].ID, Model: "m"}}})
			}()
			go func() {
				defer wg.Done()
				outcomes[i][1] = s.DeleteCredential(ctx, account, creds[i].ID)
			}()
		}
		wg.Wait()
		var total, sum, rows, events, stripes int64
		if err := db.QueryRow(ctx, `SELECT CAST(sum(tokens) AS bigint), count(*) FROM usage_months WHERE account_id = $1`,
			account).Scan(&total, &stripes); err != nil {
			t.Fatal(err)
		}
		if b, err := s.Budget(ctx, account, now.Format("2006-01")); err != nil || b.Used != total {
			t.Fatalf("Budget = %+v, %v; want the month's total %d", b, err, total)
		}
		// On PostgreSQL the writers spread over the stripes (24 rows all
		// in one of 16 stripes is a chance of 16^-23); SQLite keeps one.
		if want := engine == sqldb.SQLite; (stripes == 1) != want {
			t.Errorf("%d stripes on %s", stripes, engine)
		}
		if err := db.QueryRow(ctx, `SELECT count(*), sum(prompt_tokens + completion_tokens) FROM usage`).Scan(&rows, &sum); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&events); err != nil {
			t.Fatal(err)
		}
		if total != sum || rows != writers || events != writers {
			t.Fatalf("month total %d, usage sum %d over %d rows, %d events; want equal totals and %d of each", total, sum, rows, events, writers)
		}
		for i, o := range outcomes {
			put, del := errs.Code(o[0]), errs.Code(o[1])
			ok := (o[0] == nil && del == muse.CodeCredentialInUse) || (put == muse.CodeValidation && o[1] == nil)
			if !ok {
				t.Errorf("writer %d: put %v, delete %v; want exactly one to win", i, o[0], o[1])
			}
		}
		var dangling int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM alias_targets t LEFT JOIN provider_credentials c ON c.id = t.credential_id
			WHERE c.id IS NULL`).Scan(&dangling); err != nil || dangling != 0 {
			t.Fatalf("dangling targets = %d, %v", dangling, err)
		}
		if _, err := db.Exec(ctx, `UPDATE usage SET prompt_tokens = 0`); err == nil {
			t.Fatal("a usage row was changed")
		}
		if _, err := db.Exec(ctx, `DELETE FROM usage`); err == nil {
			t.Fatal("a usage row was deleted")
		}
	})
}
