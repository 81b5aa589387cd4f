// Package pantry is the project registry (pantry.md): the projects an
// account's members publish, their field rules, who may write them, the
// public reads and searches, and stars. It knows no SQL and no HTTP: the
// Store is sqlstore's, Identity is identity's client, Media is darkroom's.
package pantry

import (
	"context"
	"time"
)

// The error codes pantry answers with; httpapi maps each to one status.
const (
	CodeUnauthenticated   = "unauthenticated"    // 401
	CodeForbidden         = "forbidden"          // 403: a role that may not
	CodeInsufficientScope = "insufficient_scope" // 403: an API key without projects:write
	CodeNotFound          = "not_found"          // 404
	CodeSlugTaken         = "slug_taken"         // 409
	CodeValidation        = "validation_failed"  // 422: field errors
	CodeLogoNotPublic     = "logo_not_public"    // 422: private or missing media
	CodeUnavailable       = "unavailable"        // 503
)

// Messages for codes several places answer with.
const (
	MsgUnauthenticated = "a valid identity access token or API key is required"
	MsgNotFound        = "no such project"
	MsgUnavailable     = "a service pantry depends on is unavailable; try again shortly"
)

// Visibility of a project: an unlisted one answers by slug and never
// appears in lists, searches or tag counts.
const (
	VisibilityPublic   = "public"
	VisibilityUnlisted = "unlisted"
)

// Roles identity reports, and the API key scope that writes projects.
const (
	RoleOwner          = "owner"
	RoleAdmin          = "admin"
	RoleMember         = "member"
	RoleAPIKey         = "api_key"
	ScopeProjectsWrite = "projects:write"
)

// Project is one registry entry (pantry.md section 2). DescriptionHTML is
// Description rendered safe; Tags and Uses are sorted.
type Project struct {
	ID              string
	Slug            string
	Name            string
	Summary         string
	Description     string
	DescriptionHTML string
	HomepageURL     string
	RepositoryURL   string
	Tags            []string
	Uses            []string
	LogoMediaID     string
	AccountID       string
	CreatedBy       string
	Visibility      string
	Stars           int64
	// Version counts the project's writes; an update applies only over
	// the version it read.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TagCount is a tag and how many public projects carry it.
type TagCount struct {
	Tag   string
	Count int64
}

// Sort orders of a list.
const (
	SortRelevance = "relevance"
	SortRecent    = "recent"
	SortStars     = "stars"
	SortName      = "name"
)

// Query is one page of the public list (pantry.md section 2). Cursor is
// the opaque token of the previous page's Next.
type Query struct {
	Q      string
	Tag    string
	Uses   string
	Sort   string
	Cursor string
	Limit  int
}

// Page is one page of projects; Next is empty on the last page.
type Page struct {
	Projects []Project
	Next     string
}

// Store is pantry's persistence (sqlstore implements it on both engines).
// Every write carries the event it makes true, written to the outbox in
// the same transaction.
type Store interface {
	// CreateProject inserts p. Errors: slug_taken (the slug is any
	// project's current or former slug).
	CreateProject(ctx context.Context, p Project, ev Event) error
	// ProjectBySlug returns the project whose current slug is slug, or,
	// with moved true, the project that once had it. Errors: not_found.
	ProjectBySlug(ctx context.Context, slug string) (p Project, moved bool, err error)
	// UpdateProject writes p over the row with p.ID, provided its version
	// is still p.Version; a new slug is reserved for it and the old one
	// keeps answering. Errors: not_found, slug_taken, conflict (someone
	// else wrote in between; the caller retries).
	UpdateProject(ctx context.Context, p Project, ev Event) error
	// DeleteProject removes the project and frees its slugs. Errors:
	// not_found.
	DeleteProject(ctx context.Context, id string, ev Event) error
	// ListProjects answers a validated query over public projects.
	ListProjects(ctx context.Context, q Query) (Page, error)
	// Tags returns every tag of a public project with its count, most
	// used first.
	Tags(ctx context.Context) ([]TagCount, error)
	// Star records userID's star once and returns the count after it.
	// Errors: not_found.
	Star(ctx context.Context, projectID, userID string) (int64, error)
	// Unstar removes userID's star, if any, and returns the count after.
	Unstar(ctx context.Context, projectID, userID string) (int64, error)
	// AccountProjects lists the projects of accountID, public and
	// unlisted, by name (at most limit).
	AccountProjects(ctx context.Context, accountID string, limit int) ([]Project, error)
	// StarredBy lists the projects userID starred, most recent first.
	StarredBy(ctx context.Context, userID string, limit int) ([]Project, error)
}

// Identity answers who a caller is (identity's key set and API).
type Identity interface {
	// User returns the user a signed-in token belongs to. Errors:
	// unauthenticated, unavailable.
	User(ctx context.Context, token string) (string, error)
	// AccountRole returns the caller's role in accountID and an API key's
	// scopes. Errors: unauthenticated, not_found, unavailable.
	AccountRole(ctx context.Context, token, accountID string) (string, []string, error)
}

// Media answers whether a darkroom media is public.
type Media interface {
	// Public reports whether id names public media. Errors: unavailable.
	Public(ctx context.Context, id string) (bool, error)
}
