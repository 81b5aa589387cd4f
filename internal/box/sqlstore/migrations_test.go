package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// migrationsBefore is box's schema history without version and later.
func migrationsBefore(t *testing.T, version string) sqldb.Migrations {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(sqlstore.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, name, _ := strings.Cut(path, "/")
		if name < version {
			b, err := fs.ReadFile(sqlstore.Migrations, path)
			out[path] = &fstest.MapFile{Data: b}
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCapabilitiesIssuedBeforeSelectors: a capability issued before
// migration 00004 gave capabilities selectors is still redeemed once by its
// token afterwards, and a forged token of the old form is still unknown.
func TestCapabilitiesIssuedBeforeSelectors(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, migrationsBefore(t, "00004"))
		s := sqlstore.New(db)
		// The schema of then: the store of now writes columns it lacks.
		var entitlementID int64
		if err := db.QueryRow(ctx, `INSERT INTO entitlements (account_id, product, status, granted_by, granted_at)
			VALUES ($1, 'kit', 'active', $2, $3) RETURNING id`, account, staffID, sqldb.Timestamp(time.Now())).Scan(&entitlementID); err != nil {
			t.Fatal(err)
		}
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			t.Fatal(err)
		}
		token := "boxcap_" + base64.RawURLEncoding.EncodeToString(secret)
		now := time.Now()
		if _, err := db.Exec(ctx, `
			INSERT INTO capabilities (token_digest, entitlement_id, account_id, artifact, created_at, expires_at)
			VALUES ($1, $2, $3, 'kit', $4, $5)`,
			box.TokenDigest(token), entitlementID, account, sqldb.Timestamp(now), sqldb.Timestamp(now.Add(time.Minute))); err != nil {
			t.Fatal(err)
		}

		if n, err := db.Migrate(ctx, sqlstore.Migrations); err != nil || n == 0 {
			t.Fatalf("migrate = %d, %v; want the selector migration applied", n, err)
		}
		svc := box.NewService(s, nil, 0)
		forged := "boxcap_" + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
		if _, err := svc.Redeem(ctx, &forged); errs.Code(err) != box.CodeNotFound {
			t.Errorf("redeem a forged token: %v, want not_found", err)
		}
		red, err := svc.Redeem(ctx, &token)
		if err != nil || red.AccountID != account || red.Artifact != box.ProductKit {
			t.Fatalf("redeem the earlier token = %+v, %v; want the kit for %s", red, err, account)
		}
		if _, err := svc.Redeem(ctx, &token); errs.Code(err) != box.CodeCapabilityUsed {
			t.Errorf("second redeem: %v, want capability_used", err)
		}
	})
}

// TestMigrationDropsReplaysSealedWithoutTheSecret: replays stored before
// migration 00005 were sealed with a key derived from the Idempotency-Key
// alone; the migration leaves none of them.
func TestMigrationDropsReplaysSealedWithoutTheSecret(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, migrationsBefore(t, "00005"))
		if _, err := db.Exec(ctx, `
			INSERT INTO idempotency_keys (scope, key_digest, fingerprint, status, body, created_at)
			VALUES ('token:x', 'digest', 'fp', 201, $1, $2)`, []byte("sealed"), sqldb.Timestamp(time.Now())); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx, sqlstore.Migrations); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("idempotency rows after the migration = %d, want 0", n)
		}
	})
}
