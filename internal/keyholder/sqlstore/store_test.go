package sqlstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/keyholder/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const account = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"

func open(t *testing.T, engine sqldb.Engine) (*sqldb.DB, *sqlstore.Store) {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	return db, sqlstore.New(db)
}

func newCredential(t *testing.T, s *sqlstore.Store, digest string) keyholder.Credential {
	t.Helper()
	r := "^1.2.0"
	now := s.Now()
	c, err := s.CreateCredential(context.Background(), keyholder.Credential{
		ID: uuid.NewString(), PasswordDigest: digest, AccountID: account, Repository: "platform",
		VersionRange: &r, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	})
	if err != nil {
		t.Fatalf("CreateCredential: %v", err)
	}
	return c
}

func digestOf(b byte) string {
	out := make([]byte, 64)
	for i := range out {
		out[i] = "0123456789abcdef"[int(b+byte(i))%16]
	}
	return string(out)
}

func TestCredentialRoundTrip(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		ctx := context.Background()
		c := newCredential(t, s, digestOf(1))
		got, err := s.Credential(ctx, c.ID)
		if err != nil {
			t.Fatalf("Credential: %v", err)
		}
		if got.ID != c.ID || got.PasswordDigest != c.PasswordDigest || got.Repository != "platform" ||
			got.VersionRange == nil || *got.VersionRange != "^1.2.0" || !got.ExpiresAt.Equal(c.ExpiresAt) || got.RevokedAt != nil {
			t.Errorf("got %+v, want %+v", got, c)
		}
		if err := s.RevokeCredential(ctx, c.ID); err != nil {
			t.Fatalf("RevokeCredential: %v", err)
		}
		if err := s.RevokeCredential(ctx, c.ID); err != nil {
			t.Fatalf("second RevokeCredential: %v", err)
		}
		got, _ = s.Credential(ctx, c.ID)
		if got.RevokedAt == nil {
			t.Errorf("revoked_at is null after revoking")
		}
		if _, err := s.Credential(ctx, uuid.NewString()); errs.Code(err) != keyholder.CodeNotFound {
			t.Errorf("unknown id: got %v, want not_found", err)
		}
	})
}

func TestSchemaRefuses(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		ctx := context.Background()
		c := newCredential(t, s, digestOf(2))
		if err := s.RecordPull(ctx, keyholder.Pull{CredentialID: c.ID, AccountID: account, Repository: "platform",
			Tag: "1.2.3", Digest: "sha256:" + digestOf(3), PulledAt: s.Now()}); err != nil {
			t.Fatalf("RecordPull: %v", err)
		}
		tests := []struct{ name, query string }{
			{"WidenRange", `UPDATE credentials SET version_range = NULL`},
			{"ExtendLife", `UPDATE credentials SET expires_at = expires_at + expires_at - created_at`},
			{"MoveRepository", `UPDATE credentials SET repository = 'kit'`},
			{"UnknownRepository", `INSERT INTO credentials (id, password_digest, account_id, repository, created_at, expires_at) SELECT '` + uuid.NewString() + `', '` + digestOf(4) + `', account_id, 'secret', created_at, expires_at FROM credentials`},
			{"DuplicateDigest", `INSERT INTO credentials (id, password_digest, account_id, repository, created_at, expires_at) SELECT '` + uuid.NewString() + `', password_digest, account_id, repository, created_at, expires_at FROM credentials`},
			{"DeleteCredentialWithPulls", `DELETE FROM credentials`},
			{"EditPull", `UPDATE pulls SET tag = '9.9.9'`},
			{"DeletePull", `DELETE FROM pulls`},
			{"PullWithoutCredential", `INSERT INTO pulls (credential_id, account_id, repository, tag, digest, pulled_at) SELECT '` + uuid.NewString() + `', account_id, repository, tag, digest, pulled_at FROM pulls`},
			{"PullOfNothing", `INSERT INTO pulls (credential_id, account_id, repository, tag, digest, pulled_at) SELECT NULL, account_id, repository, tag, digest, pulled_at FROM pulls`},
			{"PullOfCredentialAndFile", `INSERT INTO pulls (credential_id, account_id, repository, tag, digest, pulled_at, file) SELECT credential_id, account_id, repository, tag, digest, pulled_at, 'a.tgz' FROM pulls`},
			{"PullOfEmptyFile", `INSERT INTO pulls (credential_id, account_id, repository, tag, digest, pulled_at, file) SELECT NULL, account_id, repository, tag, digest, pulled_at, '' FROM pulls`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := db.Exec(ctx, tt.query); err == nil {
					t.Errorf("%s: accepted, want refused", tt.query)
				}
			})
		}
		if err := s.RevokeCredential(ctx, c.ID); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		if _, err := db.Exec(ctx, `UPDATE credentials SET revoked_at = NULL`); err == nil {
			t.Errorf("un-revoking was accepted")
		}
	})
}

// TestRevokeRace races revocations of one credential: every one succeeds
// and the row ends revoked exactly once (revoked_at never moves).
func TestRevokeRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		c := newCredential(t, s, digestOf(5))
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.RevokeCredential(context.Background(), c.ID); err != nil {
					failed.Add(1)
					t.Errorf("RevokeCredential: %v", err)
				}
			}()
		}
		wg.Wait()
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM credentials WHERE revoked_at IS NOT NULL`).Scan(&n); err != nil || n != 1 {
			t.Errorf("revoked rows: got %d (%v), want 1", n, err)
		}
	})
}

func TestPullsNewestFirstPerAccount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		ctx := context.Background()
		c := newCredential(t, s, digestOf(6))
		for _, tag := range []string{"1.2.0", "1.2.1", "1.3.0"} {
			if err := s.RecordPull(ctx, keyholder.Pull{CredentialID: c.ID, AccountID: account, Repository: "platform",
				Tag: tag, Digest: "sha256:" + digestOf(7), PulledAt: s.Now()}); err != nil {
				t.Fatalf("RecordPull: %v", err)
			}
		}
		got, err := s.Pulls(ctx, account, 0, 2)
		if err != nil {
			t.Fatalf("Pulls: %v", err)
		}
		if len(got) != 2 || got[0].Tag != "1.3.0" || got[1].Tag != "1.2.1" || got[0].CredentialID != c.ID {
			t.Errorf("got %+v, want 1.3.0 then 1.2.1", got)
		}
		// The older page starts after the last pull served.
		older, err := s.Pulls(ctx, account, got[1].ID, 2)
		if err != nil || len(older) != 1 || older[0].Tag != "1.2.0" {
			t.Errorf("pulls before %d: got %+v (%v), want 1.2.0 alone", got[1].ID, older, err)
		}
		other, err := s.Pulls(ctx, "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb", 0, 10)
		if err != nil || len(other) != 0 {
			t.Errorf("another account's pulls: got %v (%v), want none", other, err)
		}
	})
}

// TestFileDownloadPull: a browser download is recorded without a
// credential, naming its file, and read back beside the credentials'.
func TestFileDownloadPull(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		ctx := context.Background()
		c := newCredential(t, s, digestOf(7))
		for _, p := range []keyholder.Pull{
			{CredentialID: c.ID, AccountID: account, Repository: "platform", Tag: "1.2.3", Digest: "sha256:" + digestOf(8), PulledAt: s.Now()},
			{AccountID: account, Repository: "platform", Tag: "1.2.3", Digest: "sha256:" + digestOf(9), PulledAt: s.Now(), File: "platform-linux-amd64.tar.gz"},
		} {
			if err := s.RecordPull(ctx, p); err != nil {
				t.Fatalf("RecordPull(%+v): %v", p, err)
			}
		}
		got, err := s.Pulls(ctx, account, 0, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("Pulls = %+v, %v; want two", got, err)
		}
		if got[0].CredentialID != "" || got[0].File != "platform-linux-amd64.tar.gz" || got[1].CredentialID != c.ID || got[1].File != "" {
			t.Errorf("Pulls = %+v; want the download (no credential, its file) then the credential's pull", got)
		}
	})
}
