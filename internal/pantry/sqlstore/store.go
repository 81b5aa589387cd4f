// Package sqlstore is pantry's SQL adapter, one implementation for both
// engines: the SQL is the same except for the search, which is
// PostgreSQL's tsvector under a GIN index and websearch_to_tsquery, and
// SQLite's FTS5 (search.go).
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements pantry.Store.
type Store struct {
	db *sqldb.DB
}

var _ pantry.Store = (*Store)(nil)

// New returns a store over db, whose schema must be migrated.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func slugTaken() error {
	return &errs.Error{Code: pantry.CodeSlugTaken, Message: "that slug is taken by another project (now or before a rename)",
		Fields: []errs.FieldError{{Field: "slug", Code: "taken"}}}
}

func notFound() error { return errs.New(pantry.CodeNotFound, pantry.MsgNotFound) }

// writeEvent appends ev to the outbox in tx: the envelope id is fixed here
// and reused by every delivery attempt.
func writeEvent(ctx context.Context, tx *sqldb.Tx, ev pantry.Event) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent)
		VALUES ($1, $2, 'pantry', $3, $4, $5, $4, $4, $6)`,
		ids.New(), ev.Type, ev.Subject, tx.Now, string(data), events.OutboxTraceparent(ctx))
	if err != nil {
		return fmt.Errorf("outbox: insert %s: %w", ev.Type, err)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func joined(s []string) string { return strings.Join(s, " ") }

func split(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, " ")
}

// CreateProject implements pantry.Store.
func (s *Store) CreateProject(ctx context.Context, p pantry.Project, ev pantry.Event) error {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO projects (id, slug, name, sort_name, summary, description, description_html, homepage_url,
				repository_url, tags, uses, logo_media_id, account_id, created_by, visibility, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16)`,
			p.ID, p.Slug, p.Name, strings.ToLower(p.Name), p.Summary, p.Description, p.DescriptionHTML, p.HomepageURL,
			p.RepositoryURL, joined(p.Tags), joined(p.Uses), nullable(p.LogoMediaID), p.AccountID, nullable(p.CreatedBy),
			p.Visibility, tx.Now)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO project_slugs (slug, project_id) VALUES ($1, $2)`, p.Slug, p.ID); err != nil {
			return err
		}
		if err := writeTags(ctx, tx, p.ID, p.Tags); err != nil {
			return err
		}
		return writeEvent(ctx, tx, ev)
	})
	if sqldb.IsUniqueViolation(err) {
		return slugTaken()
	}
	return err
}

func writeTags(ctx context.Context, tx *sqldb.Tx, id string, tags []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM project_tags WHERE project_id = $1`, id); err != nil {
		return err
	}
	for _, t := range tags {
		if _, err := tx.Exec(ctx, `INSERT INTO project_tags (project_id, tag) VALUES ($1, $2)`, id, t); err != nil {
			return err
		}
	}
	return nil
}

// columns are a project's, in scan's order, from projects p.
const columns = `p.id, p.slug, p.name, p.summary, p.description, p.description_html, p.homepage_url, p.repository_url,
	p.tags, p.uses, p.logo_media_id, p.account_id, p.created_by, p.visibility, p.stars, p.version, p.created_at, p.updated_at`

type scanner interface{ Scan(dest ...any) error }

func scan(row scanner, extra ...any) (pantry.Project, error) {
	var (
		p               pantry.Project
		tags, uses      string
		logo, createdBy sql.NullString
	)
	dest := append([]any{&p.ID, &p.Slug, &p.Name, &p.Summary, &p.Description, &p.DescriptionHTML, &p.HomepageURL,
		&p.RepositoryURL, &tags, &uses, &logo, &p.AccountID, &createdBy, &p.Visibility, &p.Stars, &p.Version,
		(*sqldb.TimeValue)(&p.CreatedAt), (*sqldb.TimeValue)(&p.UpdatedAt)}, extra...)
	if err := row.Scan(dest...); err != nil {
		return pantry.Project{}, err
	}
	p.Tags, p.Uses, p.LogoMediaID, p.CreatedBy = split(tags), split(uses), logo.String, createdBy.String
	return p, nil
}

// ProjectBySlug implements pantry.Store: one query finds the slug among
// current and former ones.
func (s *Store) ProjectBySlug(ctx context.Context, slug string) (pantry.Project, bool, error) {
	p, err := scan(s.db.QueryRow(ctx, `
		SELECT `+columns+` FROM project_slugs ps JOIN projects p ON p.id = ps.project_id WHERE ps.slug = $1`, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return pantry.Project{}, false, notFound()
	}
	if err != nil {
		return pantry.Project{}, false, err
	}
	return p, p.Slug != slug, nil
}

// UpdateProject implements pantry.Store.
func (s *Store) UpdateProject(ctx context.Context, p pantry.Project, ev pantry.Event) error {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if p.Slug != "" {
			// A slug the project had before comes back to it; any other
			// project's slug, current or former, is taken.
			var owner string
			err := tx.QueryRow(ctx, `SELECT project_id FROM project_slugs WHERE slug = $1`, p.Slug).Scan(&owner)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				if _, err := tx.Exec(ctx, `INSERT INTO project_slugs (slug, project_id) VALUES ($1, $2)`, p.Slug, p.ID); err != nil {
					return err
				}
			case err != nil:
				return err
			case !strings.EqualFold(owner, p.ID):
				return slugTaken()
			}
		}
		res, err := tx.Exec(ctx, `
			UPDATE projects SET slug = $3, name = $4, sort_name = $5, summary = $6, description = $7, description_html = $8,
				homepage_url = $9, repository_url = $10, tags = $11, uses = $12, logo_media_id = $13, visibility = $14,
				version = version + 1, updated_at = $15
			WHERE id = $1 AND version = $2`,
			p.ID, p.Version, p.Slug, p.Name, strings.ToLower(p.Name), p.Summary, p.Description, p.DescriptionHTML,
			p.HomepageURL, p.RepositoryURL, joined(p.Tags), joined(p.Uses), nullable(p.LogoMediaID), p.Visibility, tx.Now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errs.New(pantry.CodeConflict, "the project changed while it was being updated")
		}
		if err := writeTags(ctx, tx, p.ID, p.Tags); err != nil {
			return err
		}
		return writeEvent(ctx, tx, ev)
	})
	if sqldb.IsUniqueViolation(err) {
		return slugTaken()
	}
	return err
}

// DeleteProject implements pantry.Store; its slugs, tags and stars go
// with it.
func (s *Store) DeleteProject(ctx context.Context, id string, ev pantry.Event) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM projects WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound()
		}
		return writeEvent(ctx, tx, ev)
	})
}

// Tags implements pantry.Store.
func (s *Store) Tags(ctx context.Context) ([]pantry.TagCount, error) {
	rows, err := s.db.Query(ctx, `
		SELECT t.tag, count(*) FROM project_tags t JOIN projects p ON p.id = t.project_id
		WHERE p.visibility = 'public' GROUP BY t.tag ORDER BY count(*) DESC, t.tag`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []pantry.TagCount{}
	for rows.Next() {
		var tc pantry.TagCount
		if err := rows.Scan(&tc.Tag, &tc.Count); err != nil {
			return nil, err
		}
		out = append(out, tc)
	}
	return out, rows.Err()
}

// Star implements pantry.Store: the star row is added once (a repeat
// changes nothing) and the trigger counts it under the project's lock.
func (s *Store) Star(ctx context.Context, projectID, userID string) (int64, error) {
	var stars int64
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO stars (project_id, user_id, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (project_id, user_id) DO NOTHING`, projectID, userID, tx.Now); err != nil {
			if sqldb.IsForeignKeyViolation(err) || sqldb.IsRaised(err) {
				return notFound()
			}
			return err
		}
		return countStars(ctx, tx, projectID, &stars)
	})
	return stars, err
}

// Unstar implements pantry.Store.
func (s *Store) Unstar(ctx context.Context, projectID, userID string) (int64, error) {
	var stars int64
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM stars WHERE project_id = $1 AND user_id = $2`, projectID, userID); err != nil {
			return err
		}
		return countStars(ctx, tx, projectID, &stars)
	})
	return stars, err
}

func countStars(ctx context.Context, tx *sqldb.Tx, projectID string, stars *int64) error {
	err := tx.QueryRow(ctx, `SELECT stars FROM projects WHERE id = $1`, projectID).Scan(stars)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound()
	}
	return err
}

// AccountProjects implements pantry.Store.
func (s *Store) AccountProjects(ctx context.Context, accountID string, limit int) ([]pantry.Project, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+columns+` FROM projects p WHERE p.account_id = $1 ORDER BY p.sort_name, p.id LIMIT $2`, accountID, limit)
	if err != nil {
		return nil, err
	}
	return collect(rows)
}

// StarredBy implements pantry.Store.
func (s *Store) StarredBy(ctx context.Context, userID string, limit int) ([]pantry.Project, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+columns+` FROM stars st JOIN projects p ON p.id = st.project_id
		WHERE st.user_id = $1 ORDER BY st.created_at DESC, p.id DESC LIMIT $2`, userID, limit)
	if err != nil {
		return nil, err
	}
	return collect(rows)
}

func collect(rows *sql.Rows, extra ...any) ([]pantry.Project, error) {
	defer rows.Close()
	out := []pantry.Project{}
	for rows.Next() {
		p, err := scan(rows, extra...)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
