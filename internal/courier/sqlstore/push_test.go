package sqlstore_test

import (
	"context"
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

func subscribe(t *testing.T, s *sqlstore.Store, userID, address, endpoint string) courier.PushSubscription {
	t.Helper()
	sub, err := s.SubscribePush(context.Background(), address, courier.PushSubscription{ID: uuid.NewString(), UserID: userID,
		Endpoint: endpoint, P256dh: "key", Device: "Chromium"}, []byte("sealed-auth"))
	if err != nil {
		t.Fatalf("SubscribePush: %v", err)
	}
	return sub
}

// queuePush sends template to address with pushes for its category.
func queuePush(t *testing.T, s *sqlstore.Store, template, to string) courier.Email {
	t.Helper()
	e, err := s.CreateEmail(context.Background(), courier.NewEmail{ID: uuid.NewString(), Template: template, To: to,
		Locale: "en", RequestedBy: "identity", SealedData: []byte("sealed"), PushCategory: courier.PushCategory(template)},
		func(_ []string, p *courier.Preferences) string {
			if p != nil && !p.On(courier.CategoryAccountActivity) && !courier.IsSecurity(template) {
				return courier.SkipPreferenceOff
			}
			return ""
		})
	if err != nil {
		t.Fatalf("CreateEmail: %v", err)
	}
	return e
}

func pushStatuses(t *testing.T, s *sqlstore.Store, emailID string) []string {
	t.Helper()
	ps, err := s.Pushes(context.Background(), emailID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Status)
	}
	return out
}

func TestPushLifecycle(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		t.Run("QueuedPerSubscriptionForCategoriesOnly", func(t *testing.T) {
			_, s := open(t, engine)
			user := uuid.NewString()
			subscribe(t, s, user, "ann@example.com", "https://push.example/a")
			subscribe(t, s, user, "ann@example.com", "https://push.example/b")
			e := queuePush(t, s, courier.TemplateWelcome, "Ann@Example.com")
			if e.Pushes != 2 {
				t.Errorf("welcome queued %d pushes, want one per subscription (2)", e.Pushes)
			}
			sec := queuePush(t, s, courier.TemplatePasswordReset, "ann@example.com")
			if sec.Pushes != 0 || len(pushStatuses(t, s, sec.ID)) != 0 {
				t.Errorf("a security message was pushed")
			}
			if _, err := s.UpdatePreferences(ctx, user, "ann@example.com", courier.PreferencesPatch{AccountActivity: new(bool)}); err != nil {
				t.Fatal(err)
			}
			off := queuePush(t, s, courier.TemplateWelcome, "ann@example.com")
			if off.Pushes != 0 || off.Status != courier.StatusSuppressed {
				t.Errorf("with account_activity off: %d pushes, email %s; want none, suppressed", off.Pushes, off.Status)
			}
			other := queuePush(t, s, courier.TemplateWelcome, "nobody@example.com")
			if other.Pushes != 0 {
				t.Errorf("an address of no subscriber was pushed")
			}
		})
		t.Run("ClaimRecordAndHistory", func(t *testing.T) {
			db, s := open(t, engine)
			user := uuid.NewString()
			sub := subscribe(t, s, user, "bo@example.com", "https://push.example/bo")
			e := queuePush(t, s, courier.TemplateWelcome, "bo@example.com")
			claimed, err := s.ClaimPushes(ctx, 10, time.Minute)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("ClaimPushes = %d, %v", len(claimed), err)
			}
			c := claimed[0]
			if c.Endpoint != sub.Endpoint || string(c.SealedAuth) != "sealed-auth" || string(c.SealedData) != "sealed" || c.Attempts != 1 || c.EmailID != e.ID {
				t.Fatalf("claimed %+v", c)
			}
			if again, _ := s.ClaimPushes(ctx, 10, time.Minute); len(again) != 0 {
				t.Fatal("a leased push was claimed again")
			}
			past := time.Now().Add(-time.Second)
			if err := s.RecordPushes(ctx, []courier.PushOutcome{{Push: c, Status: courier.PushQueued, Detail: "503", Next: &past}}); err != nil {
				t.Fatal(err)
			}
			c2, _ := s.ClaimPushes(ctx, 10, time.Minute)
			if len(c2) != 1 || c2[0].Attempts != 2 {
				t.Fatalf("after a retry: %+v", c2)
			}
			// The first attempt lost its lease: it records nothing.
			if err := s.RecordPushes(ctx, []courier.PushOutcome{{Push: c, Status: courier.PushFailed}}); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordPushes(ctx, []courier.PushOutcome{{Push: c2[0], Status: courier.PushDelivered, Detail: "201"}}); err != nil {
				t.Fatal(err)
			}
			ps, err := s.Pushes(ctx, e.ID)
			if err != nil || len(ps) != 1 {
				t.Fatalf("Pushes = %+v, %v", ps, err)
			}
			var hist []string
			for _, h := range ps[0].History {
				hist = append(hist, h.Status+":"+h.Detail)
			}
			if want := []string{"queued:", "queued:503", "delivered:201"}; !slices.Equal(hist, want) || ps[0].Status != courier.PushDelivered || ps[0].Attempts != 2 {
				t.Errorf("push = %s after %d attempts, history %v; want delivered, 2, %v", ps[0].Status, ps[0].Attempts, hist, want)
			}
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM push_sends WHERE data_sealed IS NOT NULL`).Scan(&n); err != nil || n != 0 {
				t.Errorf("%d pushes keep their data after delivery (%v)", n, err)
			}
		})
		t.Run("ExpiredDeletesTheSubscription", func(t *testing.T) {
			_, s := open(t, engine)
			user := uuid.NewString()
			subscribe(t, s, user, "cy@example.com", "https://push.example/cy")
			first := queuePush(t, s, courier.TemplateWelcome, "cy@example.com")
			second := queuePush(t, s, courier.TemplateWelcome, "cy@example.com")
			claimed, err := s.ClaimPushes(ctx, 1, time.Minute)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("ClaimPushes = %d, %v", len(claimed), err)
			}
			if err := s.RecordPushes(ctx, []courier.PushOutcome{{Push: claimed[0], Status: courier.PushExpired, Detail: "410"}}); err != nil {
				t.Fatal(err)
			}
			if subs, _ := s.PushSubscriptions(ctx, user); len(subs) != 0 {
				t.Errorf("subscriptions after a 410 = %+v, want none", subs)
			}
			got := append(pushStatuses(t, s, first.ID), pushStatuses(t, s, second.ID)...)
			if !slices.Equal(got, []string{courier.PushExpired, courier.PushFailed}) {
				t.Errorf("statuses = %v, want the expired one and the other failed", got)
			}
		})
		t.Run("DeleteIsTheOwnersAndFailsQueued", func(t *testing.T) {
			_, s := open(t, engine)
			user := uuid.NewString()
			sub := subscribe(t, s, user, "di@example.com", "https://push.example/di")
			e := queuePush(t, s, courier.TemplateWelcome, "di@example.com")
			if err := s.DeletePushSubscription(ctx, uuid.NewString(), sub.ID); errs.Code(err) != courier.CodeNotFound {
				t.Errorf("another user's delete = %v, want not_found", err)
			}
			if err := s.DeletePushSubscription(ctx, user, sub.ID); err != nil {
				t.Fatal(err)
			}
			if got := pushStatuses(t, s, e.ID); !slices.Equal(got, []string{courier.PushFailed}) {
				t.Errorf("statuses = %v, want failed", got)
			}
			if _, err := s.Pushes(ctx, uuid.NewString()); errs.Code(err) != courier.CodeNotFound {
				t.Errorf("Pushes(unknown email) = %v, want not_found", err)
			}
		})
		t.Run("EndpointMovesToTheUserWhoSubscribedLast", func(t *testing.T) {
			_, s := open(t, engine)
			ann, bob := uuid.NewString(), uuid.NewString()
			first := subscribe(t, s, ann, "ann@example.com", "https://push.example/shared")
			e := queuePush(t, s, courier.TemplateWelcome, "ann@example.com")
			second := subscribe(t, s, bob, "bob@example.com", "https://push.example/shared")
			if second.ID != first.ID {
				t.Errorf("the endpoint got a second row")
			}
			if subs, _ := s.PushSubscriptions(ctx, ann); len(subs) != 0 {
				t.Errorf("ann still lists %d subscriptions", len(subs))
			}
			if got := pushStatuses(t, s, e.ID); !slices.Equal(got, []string{courier.PushFailed}) {
				t.Errorf("ann's queued push = %v, want failed (not sent to bob's browser)", got)
			}
		})
	})
}

// TestPushDatabaseInvariants writes around the store: the database
// refuses a final status that keeps its data or changes, a history row
// that changes, a plain-http endpoint, and a subscription deleted while a
// push to it is queued.
func TestPushDatabaseInvariants(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		user := uuid.NewString()
		sub := subscribe(t, s, user, "inv@example.com", "https://push.example/inv")
		e := queuePush(t, s, courier.TemplateWelcome, "inv@example.com")
		done := queuePush(t, s, courier.TemplateWelcome, "inv@example.com")
		if _, err := db.Exec(ctx, `UPDATE push_sends SET status = 'delivered', data_sealed = NULL WHERE email_id = $1`, done.ID); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ name, sql string }{
			{"FinalStatusKeepsData", `UPDATE push_sends SET status = 'failed' WHERE email_id = '` + e.ID + `'`},
			{"FinalStatusChanges", `UPDATE push_sends SET status = 'failed' WHERE email_id = '` + done.ID + `'`},
			{"HistoryChanges", `UPDATE push_history SET detail = 'x'`},
			{"HistoryDeleted", `DELETE FROM push_history`},
			{"PlainHTTPEndpoint", `UPDATE push_subscriptions SET endpoint = 'http://push.example/inv'`},
			{"SubscriptionDeletedUnderAQueuedPush", `DELETE FROM push_subscriptions WHERE id = '` + sub.ID + `'`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := db.Exec(ctx, tc.sql); err == nil {
					t.Errorf("%s was accepted", tc.sql)
				}
			})
		}
	})
}

// TestSubscribeRace races browsers subscribing one endpoint for two users:
// the UNIQUE endpoint leaves one row, owned by one of them.
func TestSubscribeRace(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		users := []string{uuid.NewString(), uuid.NewString()}
		var wg sync.WaitGroup
		errc := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				_, err := s.SubscribePush(ctx, "race"+string(rune('a'+i%2))+"@example.com", courier.PushSubscription{ID: uuid.NewString(),
					UserID: users[i%2], Endpoint: "https://push.example/race", P256dh: "k"}, []byte("a"))
				errc <- err
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil && !sqldb.IsUniqueViolation(err) {
				t.Errorf("SubscribePush: %v", err)
			}
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM push_subscriptions WHERE endpoint = 'https://push.example/race'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%d rows for one endpoint (%v), want 1", n, err)
		}
	})
}

// TestRecordPushRace races two attempts' outcomes for one push: the lease
// and the final-status trigger let exactly one land.
func TestRecordPushRace(t *testing.T) {
	ctx := context.Background()
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		subscribe(t, s, uuid.NewString(), "rr@example.com", "https://push.example/rr")
		e := queuePush(t, s, courier.TemplateWelcome, "rr@example.com")
		claimed, err := s.ClaimPushes(ctx, 1, time.Minute)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("ClaimPushes = %d, %v", len(claimed), err)
		}
		var wg sync.WaitGroup
		for _, status := range []string{courier.PushDelivered, courier.PushFailed, courier.PushExpired, courier.PushDelivered} {
			wg.Go(func() {
				if err := s.RecordPushes(ctx, []courier.PushOutcome{{Push: claimed[0], Status: status}}); err != nil {
					t.Errorf("RecordPushes(%s): %v", status, err)
				}
			})
		}
		wg.Wait()
		ps, err := s.Pushes(ctx, e.ID)
		if err != nil || len(ps) != 1 {
			t.Fatalf("Pushes = %+v, %v", ps, err)
		}
		if n := len(ps[0].History); n != 2 {
			t.Errorf("history has %d entries, want queued and one outcome", n)
		}
	})
}
