package sqldb_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// keyedSchema is a table shaped like box's capabilities: a row appended
// under a random unique key, so every insert touches a random index page.
var keyedSchema = fstest.MapFS{
	"postgres/00001_keyed.sql": {Data: []byte(`-- +goose Up
CREATE TABLE keyed (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, k text NOT NULL UNIQUE, v text NOT NULL);
-- +goose Down
DROP TABLE keyed;
`)},
	"sqlite/00001_keyed.sql": {Data: []byte(`-- +goose Up
CREATE TABLE keyed (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE, v TEXT NOT NULL);
-- +goose Down
DROP TABLE keyed;
`)},
}

// BenchmarkWrite reports single-row inserts/s through Write from parallel
// callers (b.SetParallelism scales them: -cpu 2 runs 32 callers), each
// its own committed statement.
func BenchmarkWrite(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			db := sqltest.Open(b, engine, keyedSchema)
			ctx := context.Background()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := make([]byte, 32)
				for pb.Next() {
					_, _ = rand.Read(key)
					if _, err := db.Write(ctx, `INSERT INTO keyed (k, v) VALUES ($1, $2)`, hex.EncodeToString(key), "platform ~1.4.0"); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkQueryRow reports primary-key reads/s from parallel callers
// (b.SetParallelism as for BenchmarkWrite), through QueryRow (on SQLite,
// a statement from the cache), through the pool directly (prepared for
// each call), and through ReadRow (on PostgreSQL, coalesced into
// pipelines): the case for the statement cache on SQLite and for read
// coalescing on PostgreSQL (ReadRow against Cached).
func BenchmarkQueryRow(b *testing.B) {
	reads := []struct {
		name string
		read func(ctx context.Context, db *sqldb.DB, id int64) (string, error)
	}{
		{"Cached", func(ctx context.Context, db *sqldb.DB, id int64) (v string, err error) {
			err = db.QueryRow(ctx, `SELECT v FROM keyed WHERE id = $1`, id).Scan(&v)
			return v, err
		}},
		{"Unprepared", func(ctx context.Context, db *sqldb.DB, id int64) (v string, err error) {
			err = db.DB.QueryRowContext(ctx, db.Rebind(`SELECT v FROM keyed WHERE id = $1`), id).Scan(&v)
			return v, err
		}},
		{"ReadRow", func(ctx context.Context, db *sqldb.DB, id int64) (v string, err error) {
			err = db.ReadRow(ctx, `SELECT v FROM keyed WHERE id = $1`, id).Scan(&v)
			return v, err
		}},
	}
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			db := sqltest.Open(b, engine, keyedSchema)
			ctx := context.Background()
			const rows = 1000
			for i := range rows {
				if _, err := db.Exec(ctx, `INSERT INTO keyed (k, v) VALUES ($1, $2)`, strconv.Itoa(i), "platform ~1.4.0"); err != nil {
					b.Fatal(err)
				}
			}
			for _, r := range reads {
				b.Run(r.name, func(b *testing.B) {
					b.SetParallelism(16)
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						var id int64
						for pb.Next() {
							id = id%rows + 1
							if v, err := r.read(ctx, db, id); err != nil || v == "" {
								b.Errorf("read %d = %q, %v", id, v, err)
								return
							}
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
				})
			}
		})
	}
}
