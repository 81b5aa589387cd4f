package sqlstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

var sum = strings.Repeat("ab", 32)

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

func upload(owner string, size int64) darkroom.Upload {
	return darkroom.Upload{ID: ids.New(), OwnerID: owner, Filename: "a.png", ContentType: darkroom.TypePNG, Size: size,
		SHA256: sum, Visibility: darkroom.VisibilityPrivate}
}

func mediaOf(u darkroom.Upload) darkroom.Media {
	return darkroom.Media{ID: u.ID, OwnerID: u.OwnerID, Filename: u.Filename, ContentType: u.ContentType, Size: u.Size,
		SHA256: u.SHA256, Width: 4, Height: 3, Visibility: u.Visibility}
}

func TestUploadsCompleteOnceAndCount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		owner := ids.New()
		u := upload(owner, 100)
		if err := s.CreateUpload(ctx, u); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Upload(ctx, u.ID); err != nil || got.Size != 100 || got.OwnerID != owner {
			t.Fatalf("upload %+v, %v", got, err)
		}
		if n, err := s.Usage(ctx, owner); err != nil || n != 100 {
			t.Fatalf("usage with a pending upload = %d, %v", n, err)
		}
		m, err := s.CompleteUpload(ctx, mediaOf(u), 1000)
		if err != nil || m.ID != u.ID || m.Width != 4 || m.CreatedAt.IsZero() {
			t.Fatalf("complete %+v, %v", m, err)
		}
		// Again: the same media, nothing charged twice.
		again, err := s.CompleteUpload(ctx, mediaOf(u), 1000)
		if err != nil || again != m {
			t.Fatalf("second completion %+v, %v", again, err)
		}
		if n, _ := s.Usage(ctx, owner); n != 100 {
			t.Fatalf("usage = %d, want 100", n)
		}
		_, err = s.Upload(ctx, u.ID)
		wantCode(t, err, darkroom.CodeNotFound)
		_, err = s.CompleteUpload(ctx, mediaOf(upload(owner, 5)), 1000)
		wantCode(t, err, darkroom.CodeNotFound)

		if err := s.DeleteMedia(ctx, m.ID, ids.New()); errs.Code(err) != darkroom.CodeNotFound {
			t.Fatalf("another owner's delete: %v", err)
		}
		if err := s.DeleteMedia(ctx, m.ID, owner); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Usage(ctx, owner); n != 0 {
			t.Fatalf("usage after delete = %d", n)
		}
		_, err = s.Media(ctx, m.ID)
		wantCode(t, err, darkroom.CodeNotFound)
	})
}

// TestQuotaHoldsUnderRaces completes eight uploads of 300 bytes at once
// under a quota of 1000: exactly three fit.
func TestQuotaHoldsUnderRaces(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		owner := ids.New()
		var us []darkroom.Upload
		for range 8 {
			u := upload(owner, 300)
			if err := s.CreateUpload(ctx, u); err != nil {
				t.Fatal(err)
			}
			us = append(us, u)
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ok, over int
		)
		for _, u := range us {
			wg.Go(func() {
				_, err := s.CompleteUpload(ctx, mediaOf(u), 1000)
				mu.Lock()
				defer mu.Unlock()
				switch errs.Code(err) {
				case "":
					if err != nil {
						t.Errorf("complete: %v", err)
					}
					ok++
				case darkroom.CodeQuotaExceeded:
					over++
				default:
					t.Errorf("complete: %v", err)
				}
			})
		}
		wg.Wait()
		if ok != 3 || over != 5 {
			t.Fatalf("%d completed, %d over quota; want 3 and 5", ok, over)
		}
		wantCode(t, s.CreateMedia(ctx, mediaOf(upload(owner, 101)), 1000), darkroom.CodeQuotaExceeded)
		if err := s.CreateMedia(ctx, mediaOf(upload(owner, 100)), 1000); err != nil {
			t.Fatal(err)
		}
	})
}

// TestVariantRecordedOnce inserts one variant from twenty goroutines:
// one row, and each caller reads the row that won.
func TestVariantRecordedOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		u := upload(ids.New(), 10)
		m := mediaOf(u)
		if err := s.CreateMedia(ctx, m, 1000); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		sums := make([]string, 20)
		for i := range sums {
			wg.Go(func() {
				v, err := s.AddVariant(ctx, darkroom.Variant{MediaID: m.ID, Preset: "card", Format: "webp",
					ContentType: darkroom.TypeWebP, Size: int64(10 + i), SHA256: sum, Width: 480, Height: 270})
				if err != nil {
					t.Errorf("add: %v", err)
				}
				sums[i] = v.SHA256 + "/" + string(rune('0'+v.Size%10))
			})
		}
		wg.Wait()
		for _, got := range sums[1:] {
			if got != sums[0] {
				t.Fatalf("callers read different rows: %v", sums)
			}
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM variants`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("variant rows = %d, %v", n, err)
		}
		if vs, err := s.Variants(ctx, m.ID); err != nil || len(vs) != 1 {
			t.Fatalf("variants %v, %v", vs, err)
		}
		_, err := s.AddVariant(ctx, darkroom.Variant{MediaID: ids.New(), Preset: "card", Format: "webp",
			ContentType: darkroom.TypeWebP, Size: 1, SHA256: sum, Width: 1, Height: 1})
		wantCode(t, err, darkroom.CodeNotFound)
		// Deleting the media takes its variants.
		if err := s.DeleteMedia(ctx, m.ID, m.OwnerID); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM variants`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("variant rows after delete = %d, %v", n, err)
		}
	})
}

func TestStaleUploads(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		now := time.Now()
		db.Now = func() time.Time { return now.Add(-25 * time.Hour) }
		old := upload(ids.New(), 1)
		if err := s.CreateUpload(ctx, old); err != nil {
			t.Fatal(err)
		}
		db.Now = func() time.Time { return now }
		if err := s.CreateUpload(ctx, upload(ids.New(), 1)); err != nil {
			t.Fatal(err)
		}
		us, err := s.StaleUploads(ctx, now.Add(-24*time.Hour), 10)
		if err != nil || len(us) != 1 || us[0].ID != old.ID {
			t.Fatalf("stale %v, %v", us, err)
		}
		if err := s.DeleteUpload(ctx, old.ID); err != nil {
			t.Fatal(err)
		}
		if us, _ := s.StaleUploads(ctx, now.Add(-24*time.Hour), 10); len(us) != 0 {
			t.Fatalf("stale after delete %v", us)
		}
	})
}

func TestDatabaseRefusesWhatTheRulesRefuse(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		m := mediaOf(upload(ids.New(), 10))
		if err := s.CreateMedia(ctx, m, 1000); err != nil {
			t.Fatal(err)
		}
		for name, stmt := range map[string]string{
			"type":        `UPDATE media SET content_type = 'text/html' WHERE id = $1`,
			"visibility":  `UPDATE media SET visibility = 'secret' WHERE id = $1`,
			"zero size":   `UPDATE media SET size = 0 WHERE id = $1`,
			"sha256":      `UPDATE media SET sha256 = 'XYZ' WHERE id = $1`,
			"usage":       `UPDATE usage SET bytes = -1 WHERE owner_id = (SELECT owner_id FROM media WHERE id = $1)`,
			"format":      `INSERT INTO variants (media_id, preset, format, content_type, size, sha256, width, height, created_at) VALUES ($1, 'card', 'bmp', 'image/bmp', 1, '` + sum + `', 1, 1, CURRENT_TIMESTAMP)`,
			"orphan":      `INSERT INTO variants (media_id, preset, format, content_type, size, sha256, width, height, created_at) VALUES ('` + ids.New() + `', 'card', 'png', 'image/png', 1, '` + sum + `', 1, 1, CURRENT_TIMESTAMP)`,
			"upload size": `INSERT INTO uploads (id, owner_id, filename, content_type, size, sha256, visibility, created_at) VALUES ('` + ids.New() + `', $1, 'a', 'image/png', 0, '` + sum + `', 'private', CURRENT_TIMESTAMP)`,
		} {
			arg := m.ID
			if name == "upload size" {
				arg = m.OwnerID
			}
			if _, err := db.Exec(ctx, stmt, arg); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
}
