package sqlstore

import (
	"context"
	"time"

	"github.com/platformco/platform/internal/sqldb"
)

// SentMailKept is how long a sent mail's row stays in mail_outbox after
// the relay handed it to courier (its sealed data is dropped at once):
// long enough to answer "was it sent?", short enough that the table stays
// the size of a week's mail.
const SentMailKept = 7 * 24 * time.Hour

// PurgeSpent deletes the rows that no longer change any answer, in one
// transaction: mail_quota windows that began at least mailWindow ago (the
// next request restarts them anyway), login_failures rows that count
// nothing (no failure since their lock ended: the next failure would
// start from zero either way), and mail_outbox rows sent more than
// SentMailKept ago. It returns how many rows went. The service runs it
// hourly (service.App.Purge).
func (s *Store) PurgeSpent(ctx context.Context, mailWindow time.Duration) (int64, error) {
	var deleted int64
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		for _, q := range []struct {
			sql string
			at  time.Time
		}{
			{`DELETE FROM mail_quota WHERE window_start <= $1`, tx.Now.Add(-mailWindow)},
			{`DELETE FROM login_failures WHERE failed_logins = 0 AND locked_until IS NOT NULL AND locked_until <= $1`, tx.Now},
			{`DELETE FROM mail_outbox WHERE sent_at IS NOT NULL AND sent_at <= $1`, tx.Now.Add(-SentMailKept)},
		} {
			res, err := tx.Exec(ctx, q.sql, sqldb.Timestamp(q.at))
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			deleted += n
		}
		return nil
	})
	return deleted, err
}
