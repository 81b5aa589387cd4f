package sqlstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func open(t *testing.T, engine sqldb.Engine) (*sqldb.DB, *sqlstore.Store) {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	return db, sqlstore.New(db)
}

func queue(t *testing.T, s *sqlstore.Store, template, to string) courier.Email {
	t.Helper()
	e, err := s.CreateEmail(context.Background(), courier.NewEmail{ID: uuid.NewString(), Template: template, To: to,
		Locale: "en", RequestedBy: "identity", SealedData: []byte("sealed")}, func(r []string, _ *courier.Preferences) string {
		if len(r) > 0 {
			return courier.SkipAddressSuppressed
		}
		return ""
	})
	if err != nil {
		t.Fatalf("CreateEmail: %v", err)
	}
	return e
}

type outboxRow struct {
	Type, Subject string
	Data          map[string]any
}

func outbox(t *testing.T, db *sqldb.DB) []outboxRow {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT type, subject, data FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		var data string
		if err := rows.Scan(&r.Type, &r.Subject, &data); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(data), &r.Data); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func types(rows []outboxRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Type)
	}
	return out
}

func sealedData(t *testing.T, db *sqldb.DB, id string) []byte {
	t.Helper()
	var b []byte
	if err := db.QueryRow(context.Background(), `SELECT data_sealed FROM emails WHERE id = $1`, id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

func claimOne(t *testing.T, s *sqlstore.Store) courier.Claimed {
	t.Helper()
	c, err := s.ClaimDue(context.Background(), 10, time.Minute)
	if err != nil || len(c) != 1 {
		t.Fatalf("ClaimDue = %d claimed, %v; want 1", len(c), err)
	}
	return c[0]
}

func TestEmailLifecycle(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		t.Run("DeliveredErasesDataAndEmits", func(t *testing.T) {
			db, s := open(t, engine)
			e := queue(t, s, courier.TemplateVerifyEmail, "ann@example.com")
			c := claimOne(t, s)
			if c.ID != e.ID || string(c.SealedData) != "sealed" || c.Attempts != 1 || c.AttemptID == "" {
				t.Fatalf("claimed %+v, want %s with its data, attempt 1", c, e.ID)
			}
			if again, _ := s.ClaimDue(ctx, 10, time.Minute); len(again) != 0 {
				t.Fatalf("a leased message was claimed again")
			}
			ok, err := deliveredOne(ctx, s, c.ID, c.AttemptID)
			if err != nil || !ok {
				t.Fatalf("Delivered = %v, %v", ok, err)
			}
			if b := sealedData(t, db, e.ID); b != nil {
				t.Errorf("data_sealed = %q after delivery, want NULL", b)
			}
			got, err := s.Email(ctx, e.ID)
			if err != nil || got.Status != courier.StatusDelivered || len(got.History) != 2 {
				t.Fatalf("Email = %+v, %v; want delivered with 2 history entries", got, err)
			}
			if want := []string{courier.EventEmailQueued, courier.EventEmailDelivered}; !slices.Equal(types(outbox(t, db)), want) {
				t.Errorf("outbox = %v, want %v", types(outbox(t, db)), want)
			}
		})
		t.Run("BouncedSuppressesTheAddress", func(t *testing.T) {
			db, s := open(t, engine)
			e := queue(t, s, courier.TemplateWelcome, "Bob@Example.com")
			c := claimOne(t, s)
			if ok, err := s.Bounced(ctx, c.ID, c.AttemptID, "550 no such user"); err != nil || !ok {
				t.Fatalf("Bounced = %v, %v", ok, err)
			}
			next := queue(t, s, courier.TemplatePasswordReset, "bob@example.com")
			if next.Status != courier.StatusSuppressed {
				t.Errorf("a send to a hard-bounced address is %s, want suppressed", next.Status)
			}
			rows := outbox(t, db)
			want := []string{courier.EventEmailQueued, courier.EventEmailBounced, courier.EventNotificationSuppressed}
			if !slices.Equal(types(rows), want) {
				t.Fatalf("outbox = %v, want %v", types(rows), want)
			}
			if rows[1].Subject != e.ID || rows[2].Subject != courier.RecipientID("bob@example.com") {
				t.Errorf("subjects = %s, %s; want the email and the recipient", rows[1].Subject, rows[2].Subject)
			}
			if _, has := rows[2].Data["email_id"]; has {
				t.Errorf("courier.notification.suppressed carries a message id: %v", rows[2].Data)
			}
		})
		t.Run("ComplaintSuppressesOnceWithOneEvent", func(t *testing.T) {
			db, s := open(t, engine)
			for range 2 {
				if _, _, err := s.Suppress(ctx, "Carol@example.com", courier.ReasonComplaint); err != nil {
					t.Fatal(err)
				}
			}
			if got := types(outbox(t, db)); !slices.Equal(got, []string{courier.EventEmailComplained}) {
				t.Errorf("outbox = %v, want one complaint", got)
			}
		})
		t.Run("StaleAttemptRecordsNothing", func(t *testing.T) {
			db, s := open(t, engine)
			queue(t, s, courier.TemplateWelcome, "dan@example.com")
			c := claimOne(t, s)
			if ok, err := deliveredOne(ctx, s, c.ID, uuid.NewString()); err != nil || ok {
				t.Fatalf("Delivered with another attempt id = %v, %v; want false", ok, err)
			}
			if ok, err := s.Retry(ctx, c.ID, c.AttemptID, "451", time.Now().Add(-time.Second)); err != nil || !ok {
				t.Fatalf("Retry = %v, %v", ok, err)
			}
			c2 := claimOne(t, s)
			if c2.AttemptID == c.AttemptID || c2.Attempts != 2 {
				t.Errorf("second claim = attempt %s (#%d), want a new attempt id, #2", c2.AttemptID, c2.Attempts)
			}
			if ok, _ := deliveredOne(ctx, s, c.ID, c.AttemptID); ok {
				t.Errorf("the first attempt recorded an outcome after losing its lease")
			}
			if ok, _ := s.Failed(ctx, c2.ID, c2.AttemptID, "gave up"); !ok {
				t.Errorf("Failed by the lease holder = false")
			}
			if b := sealedData(t, db, c.ID); b != nil {
				t.Errorf("data_sealed kept after failure")
			}
		})
		t.Run("NotFound", func(t *testing.T) {
			_, s := open(t, engine)
			if _, err := s.Email(ctx, uuid.NewString()); errs.Code(err) != courier.CodeNotFound {
				t.Errorf("Email(unknown) = %v, want not_found", err)
			}
		})
	})
}

// TestDatabaseInvariants writes around the store: the database itself
// refuses a final status that keeps its data, a final status that changes,
// and a history row that changes.
func TestDatabaseInvariants(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		e := queue(t, s, courier.TemplateWelcome, "eve@example.com")
		tests := []struct {
			name, sql string
		}{
			{"ErrFinalStatusKeepsData", `UPDATE emails SET status = 'delivered' WHERE id = $1`},
			{"ErrQueuedWithoutData", `UPDATE emails SET data_sealed = NULL WHERE id = $1`},
			{"ErrHistoryChanged", `UPDATE email_history SET detail = 'x' WHERE email_id = $1`},
			{"ErrHistoryDeleted", `DELETE FROM email_history WHERE email_id = $1`},
			{"ErrUnpublishedOutboxDeleted", `DELETE FROM outbox WHERE subject = $1`},
		}
		for _, tt := range tests {
			if _, err := db.Exec(ctx, tt.sql, e.ID); err == nil {
				t.Errorf("%s: the database accepted %s", tt.name, tt.sql)
			}
		}
		if _, err := db.Exec(ctx, `UPDATE emails SET status = 'delivered', data_sealed = NULL WHERE id = $1`, e.ID); err != nil {
			t.Fatalf("finishing properly: %v", err)
		}
		if _, err := db.Exec(ctx, `UPDATE emails SET status = 'queued', data_sealed = $2 WHERE id = $1`, e.ID, []byte("x")); err == nil {
			t.Errorf("ErrFinalStatusChanged: the database let a delivered message be queued again")
		}
	})
}

// TestClaimRace races claimers (and, on PostgreSQL, replicas' pools):
// every message is claimed by exactly one of them.
func TestClaimRace(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		const n = 60
		for i := range n {
			queue(t, s, courier.TemplateWelcome, "user"+uuid.NewString()[:8]+"@example.com")
			_ = i
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				for {
					c, err := s.ClaimDue(ctx, 7, time.Minute)
					if err != nil {
						t.Errorf("ClaimDue: %v", err)
						return
					}
					if len(c) == 0 {
						return
					}
					mu.Lock()
					for _, x := range c {
						seen[x.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Errorf("claimed %d distinct messages, want %d", len(seen), n)
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("message %s claimed %d times, want once", id, k)
			}
		}
	})
}

// TestFinishRace races two outcomes for one attempt: exactly one applies.
func TestFinishRace(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		queue(t, s, courier.TemplateWelcome, "fay@example.com")
		c := claimOne(t, s)
		var wg sync.WaitGroup
		results := make([]bool, 8)
		for i := range results {
			wg.Go(func() {
				var ok bool
				var err error
				if i%2 == 0 {
					ok, err = deliveredOne(ctx, s, c.ID, c.AttemptID)
				} else {
					ok, err = s.Bounced(ctx, c.ID, c.AttemptID, "550")
				}
				if err != nil {
					t.Errorf("outcome %d: %v", i, err)
				}
				results[i] = ok
			})
		}
		wg.Wait()
		won := 0
		for _, ok := range results {
			if ok {
				won++
			}
		}
		if won != 1 {
			t.Errorf("%d outcomes applied, want exactly 1", won)
		}
		if got := len(outbox(t, db)); got != 2 {
			t.Errorf("outbox has %d rows, want queued + one outcome", got)
		}
	})
}

// deliveredOne records one accepted attempt, as the send loop's batch does.
func deliveredOne(ctx context.Context, s *sqlstore.Store, id, attemptID string) (bool, error) {
	ok, err := s.DeliveredAll(ctx, []courier.Attempt{{ID: id, AttemptID: attemptID}})
	return ok[0], err
}
