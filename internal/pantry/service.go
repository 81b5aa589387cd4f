package pantry

import (
	"context"
	"slices"
	"strings"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// CodeConflict is a write that lost a race with another write of the same
// project, past the retries (409).
const CodeConflict = "conflict"

// updateAttempts bounds the read-modify-write of one PATCH under races.
const updateAttempts = 5

// Service is pantry's domain.
type Service struct {
	store    Store
	identity Identity
	media    Media
}

// NewService returns the domain over its store and clients.
func NewService(store Store, identity Identity, media Media) *Service {
	return &Service{store: store, identity: identity, media: media}
}

// Input is a new project as a publisher sends it.
type Input struct {
	Slug          string
	Name          string
	Summary       string
	Description   string
	HomepageURL   string
	RepositoryURL string
	Tags          []string
	Uses          []string
	LogoMediaID   string
	Visibility    string
}

// Patch changes the fields that are set.
type Patch struct {
	Slug          *string
	Name          *string
	Summary       *string
	Description   *string
	HomepageURL   *string
	RepositoryURL *string
	Tags          *[]string
	Uses          *[]string
	LogoMediaID   *string
	Visibility    *string
}

func unauthenticated() error { return errs.New(CodeUnauthenticated, MsgUnauthenticated) }
func notFound() error        { return errs.New(CodeNotFound, MsgNotFound) }

// writer is who writes: a user (id set) or an API key (id empty).
type writer struct{ userID string }

// authorize checks that token may write in accountID with one of roles:
// a user's token is verified first (without identity's API), then its
// role is asked of identity; an API key needs projects:write. Errors:
// unauthenticated, forbidden, insufficient_scope, unavailable.
func (s *Service) authorize(ctx context.Context, token, accountID string, roles ...string) (writer, error) {
	if token == "" {
		return writer{}, unauthenticated()
	}
	var w writer
	if !IsAPIKey(token) {
		id, err := s.identity.User(ctx, token)
		if err != nil {
			return writer{}, err
		}
		w.userID = id
	}
	role, scopes, err := s.identity.AccountRole(ctx, token, accountID)
	if err != nil {
		return writer{}, err
	}
	if role == RoleAPIKey {
		if w.userID != "" || !slices.Contains(scopes, ScopeProjectsWrite) {
			return writer{}, errs.New(CodeInsufficientScope, "this API key's scopes do not include projects:write")
		}
		return w, nil
	}
	if w.userID == "" || !slices.Contains(roles, role) {
		return writer{}, errs.New(CodeForbidden, "your role in this account may not do this")
	}
	return w, nil
}

// IsAPIKey reports whether a bearer credential is an identity API key.
func IsAPIKey(token string) bool { return strings.HasPrefix(token, "plat_") }

// Create publishes a project in accountID (owner or admin). Errors:
// unauthenticated, forbidden, insufficient_scope, not_found (a malformed
// account id), validation_failed, logo_not_public, slug_taken,
// unavailable.
func (s *Service) Create(ctx context.Context, token, accountID string, in Input) (Project, error) {
	account, ok := ids.Parse(accountID)
	if !ok {
		return Project{}, errs.New(CodeNotFound, "no such account")
	}
	var f errs.Fields
	p := Project{
		ID: ids.New(), AccountID: account,
		Name:          checkName(in.Name, &f),
		Summary:       checkText("summary", in.Summary, false, MaxSummary, true, &f),
		Description:   checkText("description", in.Description, true, MaxDescription, false, &f),
		HomepageURL:   checkURL("homepage_url", in.HomepageURL, &f),
		RepositoryURL: checkURL("repository_url", in.RepositoryURL, &f),
		Tags:          checkTags(in.Tags, &f),
		Uses:          checkUses(in.Uses, &f),
		LogoMediaID:   checkMediaID(in.LogoMediaID, &f),
		Visibility:    checkVisibility(in.Visibility, &f),
	}
	p.Slug = in.Slug
	field := "slug"
	if p.Slug == "" {
		p.Slug, field = SlugFrom(p.Name), "name"
	}
	if p.Name != "" || field == "slug" {
		if rule := CheckSlug(p.Slug); rule != "" {
			f.Add(field, "slug_"+rule)
		}
	}
	if err := f.Err(CodeValidation, msgValidation); err != nil {
		return Project{}, err
	}
	w, err := s.authorize(ctx, token, account, RoleOwner, RoleAdmin)
	if err != nil {
		return Project{}, err
	}
	if err := s.render(ctx, &p, ""); err != nil {
		return Project{}, err
	}
	p.CreatedBy = w.userID
	if err := s.store.CreateProject(ctx, p, projectEvent(EventProjectCreated, p, w.userID)); err != nil {
		return Project{}, err
	}
	return s.reread(ctx, p.Slug)
}

// render fills DescriptionHTML and checks a logo that changed from was.
func (s *Service) render(ctx context.Context, p *Project, was string) error {
	html, err := RenderMarkdown(p.Description)
	if err != nil {
		return err
	}
	p.DescriptionHTML = html
	if p.LogoMediaID == "" || p.LogoMediaID == was {
		return nil
	}
	public, err := s.media.Public(ctx, p.LogoMediaID)
	if err != nil {
		return err
	}
	if !public {
		return &errs.Error{Code: CodeLogoNotPublic, Message: "the logo must be public darkroom media",
			Fields: []errs.FieldError{{Field: "logo_media_id", Code: "not_public"}}}
	}
	return nil
}

func (s *Service) reread(ctx context.Context, slug string) (Project, error) {
	p, _, err := s.store.ProjectBySlug(ctx, slug)
	return p, err
}

// Get returns the project slug names; moved is true when slug is a former
// slug and p.Slug the current one. Errors: not_found.
func (s *Service) Get(ctx context.Context, slug string) (p Project, moved bool, err error) {
	if CheckSlug(slug) != "" && !Reserved(slug) {
		return Project{}, false, notFound()
	}
	return s.store.ProjectBySlug(ctx, slug)
}

// current returns the project under its current slug; a former slug names
// it too, so a writer holding an old link still reaches it.
func (s *Service) current(ctx context.Context, slug string) (Project, error) {
	p, _, err := s.Get(ctx, slug)
	return p, err
}

// Update applies patch (owner, admin or member). Errors: not_found,
// unauthenticated, forbidden, insufficient_scope, validation_failed,
// logo_not_public, slug_taken, conflict, unavailable.
func (s *Service) Update(ctx context.Context, token, slug string, patch Patch) (Project, error) {
	if token == "" {
		return Project{}, unauthenticated()
	}
	for range updateAttempts {
		old, err := s.current(ctx, slug)
		if err != nil {
			return Project{}, err
		}
		w, err := s.authorize(ctx, token, old.AccountID, RoleOwner, RoleAdmin, RoleMember)
		if err != nil {
			return Project{}, err
		}
		p, err := s.apply(ctx, old, patch)
		if err != nil {
			return Project{}, err
		}
		err = s.store.UpdateProject(ctx, p, projectEvent(EventProjectUpdated, p, w.userID))
		if errs.Code(err) == CodeConflict {
			continue
		}
		if err != nil {
			return Project{}, err
		}
		return s.reread(ctx, p.Slug)
	}
	return Project{}, errs.New(CodeConflict, "the project changed while it was being updated; try again")
}

// apply returns old with patch's fields checked and set.
func (s *Service) apply(ctx context.Context, old Project, patch Patch) (Project, error) {
	var f errs.Fields
	p := old
	p.Tags, p.Uses = slices.Clone(old.Tags), slices.Clone(old.Uses)
	if patch.Name != nil {
		p.Name = checkName(*patch.Name, &f)
	}
	if patch.Slug != nil {
		p.Slug = *patch.Slug
		if rule := CheckSlug(p.Slug); rule != "" && p.Slug != old.Slug {
			f.Add("slug", "slug_"+rule)
		}
	}
	if patch.Summary != nil {
		p.Summary = checkText("summary", *patch.Summary, false, MaxSummary, true, &f)
	}
	if patch.Description != nil {
		p.Description = checkText("description", *patch.Description, true, MaxDescription, false, &f)
	}
	if patch.HomepageURL != nil {
		p.HomepageURL = checkURL("homepage_url", *patch.HomepageURL, &f)
	}
	if patch.RepositoryURL != nil {
		p.RepositoryURL = checkURL("repository_url", *patch.RepositoryURL, &f)
	}
	if patch.Tags != nil {
		p.Tags = checkTags(*patch.Tags, &f)
	}
	if patch.Uses != nil {
		p.Uses = checkUses(*patch.Uses, &f)
	}
	if patch.LogoMediaID != nil {
		p.LogoMediaID = checkMediaID(*patch.LogoMediaID, &f)
	}
	if patch.Visibility != nil {
		if *patch.Visibility == "" {
			f.Add("visibility", RuleUnknown)
		}
		p.Visibility = checkVisibility(*patch.Visibility, &f)
	}
	if err := f.Err(CodeValidation, msgValidation); err != nil {
		return Project{}, err
	}
	if err := s.render(ctx, &p, old.LogoMediaID); err != nil {
		return Project{}, err
	}
	return p, nil
}

// Delete removes a project (owner or admin). Errors: not_found,
// unauthenticated, forbidden, insufficient_scope, unavailable.
func (s *Service) Delete(ctx context.Context, token, slug string) error {
	if token == "" {
		return unauthenticated()
	}
	p, err := s.current(ctx, slug)
	if err != nil {
		return err
	}
	w, err := s.authorize(ctx, token, p.AccountID, RoleOwner, RoleAdmin)
	if err != nil {
		return err
	}
	return s.store.DeleteProject(ctx, p.ID, deletedEvent(p, w.userID))
}

// List answers the public list. Errors: validation_failed.
func (s *Service) List(ctx context.Context, q Query) (Page, error) {
	q, err := CheckQuery(q)
	if err != nil {
		return Page{}, err
	}
	return s.store.ListProjects(ctx, q)
}

// Tags returns the public projects' tags with counts.
func (s *Service) Tags(ctx context.Context) ([]TagCount, error) { return s.store.Tags(ctx) }

// user returns the signed-in user behind token; an API key is no user.
func (s *Service) user(ctx context.Context, token string) (string, error) {
	if token == "" || IsAPIKey(token) {
		return "", unauthenticated()
	}
	return s.identity.User(ctx, token)
}

// Star records the caller's star on slug's project (once per user) and
// returns the count. Errors: unauthenticated, not_found, unavailable.
func (s *Service) Star(ctx context.Context, token, slug string, on bool) (int64, error) {
	userID, err := s.user(ctx, token)
	if err != nil {
		return 0, err
	}
	p, err := s.current(ctx, slug)
	if err != nil {
		return 0, err
	}
	if on {
		return s.store.Star(ctx, p.ID, userID)
	}
	return s.store.Unstar(ctx, p.ID, userID)
}

// MyStars lists what the caller starred. Errors: unauthenticated,
// unavailable.
// MaxAccountProjects bounds an account's list of its own projects.
const MaxAccountProjects = 500

// AccountProjects lists accountID's projects, unlisted ones included, for
// its members (any role) and its API keys with projects:write. Errors:
// unauthenticated, forbidden, insufficient_scope, not_found, unavailable.
func (s *Service) AccountProjects(ctx context.Context, token, accountID string) ([]Project, error) {
	account, ok := ids.Parse(accountID)
	if !ok {
		return nil, errs.New(CodeNotFound, "no such account")
	}
	if _, err := s.authorize(ctx, token, account, RoleOwner, RoleAdmin, RoleMember); err != nil {
		return nil, err
	}
	return s.store.AccountProjects(ctx, account, MaxAccountProjects)
}

func (s *Service) MyStars(ctx context.Context, token string) ([]Project, error) {
	userID, err := s.user(ctx, token)
	if err != nil {
		return nil, err
	}
	return s.store.StarredBy(ctx, userID, MaxLimit)
}
