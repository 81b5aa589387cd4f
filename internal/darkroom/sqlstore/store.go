// Package sqlstore is darkroom's SQL adapter, one implementation for both
// engines: the SQL is the same on PostgreSQL and SQLite.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements darkroom.Store.
type Store struct {
	db *sqldb.DB
}

var _ darkroom.Store = (*Store)(nil)

// New returns a store over db, whose schema must be migrated.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func notFound() error { return errs.New(darkroom.CodeNotFound, darkroom.MsgNotFound) }

// CreateUpload implements darkroom.Store.
func (s *Store) CreateUpload(ctx context.Context, u darkroom.Upload) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO uploads (id, owner_id, filename, content_type, size, sha256, visibility, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			u.ID, u.OwnerID, u.Filename, u.ContentType, u.Size, u.SHA256, u.Visibility, tx.Now)
		return err
	})
}

const uploadColumns = `id, owner_id, filename, content_type, size, sha256, visibility, created_at`

type scanner interface{ Scan(dest ...any) error }

func scanUpload(row scanner) (darkroom.Upload, error) {
	var u darkroom.Upload
	err := row.Scan(&u.ID, &u.OwnerID, &u.Filename, &u.ContentType, &u.Size, &u.SHA256, &u.Visibility,
		(*sqldb.TimeValue)(&u.CreatedAt))
	return u, err
}

// Upload implements darkroom.Store.
func (s *Store) Upload(ctx context.Context, id string) (darkroom.Upload, error) {
	u, err := scanUpload(s.db.QueryRow(ctx, `SELECT `+uploadColumns+` FROM uploads WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return darkroom.Upload{}, notFound()
	}
	return u, err
}

const mediaColumns = `id, owner_id, filename, content_type, size, sha256, width, height, visibility, created_at`

func scanMedia(row scanner) (darkroom.Media, error) {
	var m darkroom.Media
	err := row.Scan(&m.ID, &m.OwnerID, &m.Filename, &m.ContentType, &m.Size, &m.SHA256, &m.Width, &m.Height,
		&m.Visibility, (*sqldb.TimeValue)(&m.CreatedAt))
	return m, err
}

func media(ctx context.Context, q interface {
	QueryRow(ctx context.Context, query string, args ...any) *sql.Row
}, id string) (darkroom.Media, error) {
	m, err := scanMedia(q.QueryRow(ctx, `SELECT `+mediaColumns+` FROM media WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return darkroom.Media{}, notFound()
	}
	return m, err
}

// Media implements darkroom.Store.
func (s *Store) Media(ctx context.Context, id string) (darkroom.Media, error) {
	return media(ctx, s.db, id)
}

// charge adds size to owner's usage provided it stays within quota: one
// conditional UPDATE, so concurrent completions cannot pass it together.
func charge(ctx context.Context, tx *sqldb.Tx, owner string, size, quota int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO usage (owner_id, bytes) VALUES ($1, 0) ON CONFLICT (owner_id) DO NOTHING`, owner); err != nil {
		return err
	}
	res, err := tx.Exec(ctx, `UPDATE usage SET bytes = bytes + $2 WHERE owner_id = $1 AND bytes + $2 <= $3`, owner, size, quota)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errs.New(darkroom.CodeQuotaExceeded, "your media would pass your quota; delete some first")
	}
	return nil
}

func insertMedia(ctx context.Context, tx *sqldb.Tx, m darkroom.Media) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO media (id, owner_id, filename, content_type, size, sha256, width, height, visibility, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		m.ID, m.OwnerID, m.Filename, m.ContentType, m.Size, m.SHA256, m.Width, m.Height, m.Visibility, tx.Now)
	return err
}

// CompleteUpload implements darkroom.Store: the media row's primary key
// (the upload's id) makes a completion happen once; a repeat, or the
// loser of a race, reads the media the first recorded.
func (s *Store) CompleteUpload(ctx context.Context, m darkroom.Media, quota int64) (darkroom.Media, error) {
	var out darkroom.Media
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if existing, err := media(ctx, tx, m.ID); err == nil {
			out = existing
			return nil
		} else if errs.Code(err) != darkroom.CodeNotFound {
			return err
		}
		res, err := tx.Exec(ctx, `DELETE FROM uploads WHERE id = $1`, m.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound()
		}
		if err := charge(ctx, tx, m.OwnerID, m.Size, quota); err != nil {
			return err
		}
		if err := insertMedia(ctx, tx, m); err != nil {
			return err
		}
		out, err = media(ctx, tx, m.ID)
		return err
	})
	if sqldb.IsUniqueViolation(err) || errs.Code(err) == darkroom.CodeNotFound {
		if existing, err2 := s.Media(ctx, m.ID); err2 == nil {
			return existing, nil
		}
	}
	return out, err
}

// CreateMedia implements darkroom.Store.
func (s *Store) CreateMedia(ctx context.Context, m darkroom.Media, quota int64) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := charge(ctx, tx, m.OwnerID, m.Size, quota); err != nil {
			return err
		}
		return insertMedia(ctx, tx, m)
	})
}

// Usage implements darkroom.Store.
func (s *Store) Usage(ctx context.Context, owner string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `
		SELECT coalesce((SELECT bytes FROM usage WHERE owner_id = $1), 0) +
		       coalesce((SELECT sum(size) FROM uploads WHERE owner_id = $1), 0)`, owner).Scan(&n)
	return n, err
}

const variantColumns = `media_id, preset, format, content_type, size, sha256, width, height, created_at`

func scanVariant(row scanner) (darkroom.Variant, error) {
	var v darkroom.Variant
	err := row.Scan(&v.MediaID, &v.Preset, &v.Format, &v.ContentType, &v.Size, &v.SHA256, &v.Width, &v.Height,
		(*sqldb.TimeValue)(&v.CreatedAt))
	return v, err
}

// Variant implements darkroom.Store.
func (s *Store) Variant(ctx context.Context, mediaID, preset, format string) (darkroom.Variant, error) {
	v, err := scanVariant(s.db.QueryRow(ctx, `SELECT `+variantColumns+` FROM variants
		WHERE media_id = $1 AND preset = $2 AND format = $3`, mediaID, preset, format))
	if errors.Is(err, sql.ErrNoRows) {
		return darkroom.Variant{}, notFound()
	}
	return v, err
}

// AddVariant implements darkroom.Store: the primary key keeps one row
// however many replicas insert it.
func (s *Store) AddVariant(ctx context.Context, v darkroom.Variant) (darkroom.Variant, error) {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO variants (media_id, preset, format, content_type, size, sha256, width, height, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (media_id, preset, format) DO NOTHING`,
			v.MediaID, v.Preset, v.Format, v.ContentType, v.Size, v.SHA256, v.Width, v.Height, tx.Now)
		return err
	})
	if sqldb.IsForeignKeyViolation(err) || sqldb.IsRaised(err) {
		return darkroom.Variant{}, notFound()
	}
	if err != nil {
		return darkroom.Variant{}, err
	}
	return s.Variant(ctx, v.MediaID, v.Preset, v.Format)
}

// Variants implements darkroom.Store.
func (s *Store) Variants(ctx context.Context, mediaID string) ([]darkroom.Variant, error) {
	rows, err := s.db.Query(ctx, `SELECT `+variantColumns+` FROM variants WHERE media_id = $1 ORDER BY preset, format`, mediaID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []darkroom.Variant{}
	for rows.Next() {
		v, err := scanVariant(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteMedia implements darkroom.Store.
func (s *Store) DeleteMedia(ctx context.Context, id, owner string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var size int64
		err := tx.QueryRow(ctx, `DELETE FROM media WHERE id = $1 AND owner_id = $2 RETURNING size`, id, owner).Scan(&size)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound()
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE usage SET bytes = bytes - $2 WHERE owner_id = $1`, owner, size)
		return err
	})
}

// DeleteUpload implements darkroom.Store.
func (s *Store) DeleteUpload(ctx context.Context, id string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM uploads WHERE id = $1`, id)
	return err
}

// StaleUploads implements darkroom.Store.
func (s *Store) StaleUploads(ctx context.Context, before time.Time, limit int) ([]darkroom.Upload, error) {
	rows, err := s.db.Query(ctx, `SELECT `+uploadColumns+` FROM uploads WHERE created_at < $1 ORDER BY created_at LIMIT $2`,
		sqldb.Timestamp(before), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []darkroom.Upload{}
	for rows.Next() {
		u, err := scanUpload(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
