package parlor

import (
	"context"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/microcosm-cc/bluemonday"
)

// The project registry's pages (pantry): the public directory at
// /projects and /projects/{slug}, a star for signed-in visitors, and the
// account's Projects tab to publish, edit and delete its projects.

// Project is one registry entry as pantry answers it.
type Project struct {
	ID              string    `json:"id"`
	Slug            string    `json:"slug"`
	Name            string    `json:"name"`
	Summary         string    `json:"summary"`
	Description     string    `json:"description"`
	DescriptionHTML string    `json:"description_html"`
	HomepageURL     *string   `json:"homepage_url"`
	RepositoryURL   *string   `json:"repository_url"`
	Tags            []string  `json:"tags"`
	Uses            []string  `json:"uses"`
	LogoMediaID     *string   `json:"logo_media_id"`
	AccountID       string    `json:"account_id"`
	Visibility      string    `json:"visibility"`
	Stars           int64     `json:"stars"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// TagCount is a tag with the number of public projects carrying it.
type TagCount struct {
	Tag   string `json:"tag"`
	Count int64  `json:"count"`
}

// ProjectsPage is one page of the public directory.
type ProjectsPage struct {
	Projects   []Project `json:"projects"`
	NextCursor *string   `json:"next_cursor"`
}

// ProjectInput is what the publish and edit forms send. On an edit every
// field is sent, so the form is the project's new state.
type ProjectInput struct {
	Slug          string   `json:"slug,omitempty"`
	Name          string   `json:"name"`
	Summary       string   `json:"summary"`
	Description   string   `json:"description"`
	HomepageURL   string   `json:"homepage_url"`
	RepositoryURL string   `json:"repository_url"`
	Tags          []string `json:"tags"`
	Uses          []string `json:"uses"`
	Visibility    string   `json:"visibility"`
	// LogoMediaID is set only when a new logo was uploaded; absent, an
	// edit keeps the project's logo.
	LogoMediaID string `json:"logo_media_id,omitempty"`
}

// UploadMedia stores a file at darkroom with visibility (public or
// private) and returns its id.
func (c *Client) UploadMedia(ctx context.Context, token, visibility, filename, contentType string, data []byte) (string, error) {
	var out struct {
		Media struct {
			ID string `json:"id"`
		} `json:"media"`
	}
	q := url.Values{"visibility": {visibility}, "filename": {filename}}
	err := c.do(ctx, token, "POST", "/v1/media?"+q.Encode(), rawBody{contentType: contentType, data: data}, &out)
	return out.Media.ID, err
}

// Projects reads a page of the public directory; query carries q, tag,
// uses, sort and cursor as pantry names them.
func (c *Client) Projects(ctx context.Context, query url.Values) (ProjectsPage, error) {
	var out ProjectsPage
	err := c.do(ctx, "", "GET", "/v1/projects?"+query.Encode(), nil, &out)
	return out, err
}

// Project reads one project by its slug. A former slug answers only the
// slug the project has now, in movedTo.
func (c *Client) Project(ctx context.Context, slug string) (p Project, movedTo string, err error) {
	var out struct {
		Project Project `json:"project"`
	}
	err = c.do(ctx, "", "GET", "/v1/projects/"+url.PathEscape(slug), nil, &out)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusMovedPermanently {
		if to, ok := strings.CutPrefix(ae.Location, "/v1/projects/"); ok && to != "" {
			if to, perr := url.PathUnescape(to); perr == nil {
				return Project{}, to, nil
			}
		}
	}
	return out.Project, "", err
}

// ProjectTags lists the directory's tags, most used first.
func (c *Client) ProjectTags(ctx context.Context) ([]TagCount, error) {
	var out struct {
		Tags []TagCount `json:"tags"`
	}
	err := c.do(ctx, "", "GET", "/v1/tags", nil, &out)
	return out.Tags, err
}

// StarredProjects lists what the user starred.
func (c *Client) StarredProjects(ctx context.Context, token string) ([]Project, error) {
	var out struct {
		Projects []Project `json:"projects"`
	}
	err := c.do(ctx, token, "GET", "/v1/me/stars", nil, &out)
	return out.Projects, err
}

// StarProject stars (on) or unstars a project for the user.
func (c *Client) StarProject(ctx context.Context, token, slug string, on bool) error {
	method := "PUT"
	if !on {
		method = "DELETE"
	}
	return c.do(ctx, token, method, "/v1/projects/"+url.PathEscape(slug)+"/star", nil, nil)
}

// AccountProjects lists an account's own projects, unlisted included.
func (c *Client) AccountProjects(ctx context.Context, token, accountID string) ([]Project, error) {
	var out struct {
		Projects []Project `json:"projects"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(accountID)+"/projects", nil, &out)
	return out.Projects, err
}

// PublishProject publishes a project in the account.
func (c *Client) PublishProject(ctx context.Context, token, accountID string, in ProjectInput) (Project, error) {
	var out struct {
		Project Project `json:"project"`
	}
	err := c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(accountID)+"/projects", in, &out)
	return out.Project, err
}

// UpdateProject writes the edit form over the project.
func (c *Client) UpdateProject(ctx context.Context, token, slug string, in ProjectInput) (Project, error) {
	var out struct {
		Project Project `json:"project"`
	}
	err := c.do(ctx, token, "PATCH", "/v1/projects/"+url.PathEscape(slug), in, &out)
	return out.Project, err
}

// DeleteProject removes a project from the registry.
func (c *Client) DeleteProject(ctx context.Context, token, slug string) error {
	return c.do(ctx, token, "DELETE", "/v1/projects/"+url.PathEscape(slug), nil, nil)
}

// directoryData is /projects' content.
type directoryData struct {
	Query    url.Values
	Projects []Project
	Tags     []TagCount
	// More is the next page's query, empty on the last page.
	More string
}

// sorts are the directory's orders, as pantry names them.
var sorts = []string{"relevance", "recent", "stars", "name"}

// directory is the public list and search of projects.
func (s *server) directory(w http.ResponseWriter, r *http.Request) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	var user *Me
	if sess != nil {
		user = &sess.Me
	}
	in := r.URL.Query()
	q := url.Values{}
	for _, k := range []string{"q", "tag", "uses", "cursor"} {
		if v := strings.TrimSpace(in.Get(k)); v != "" {
			q.Set(k, v)
		}
	}
	if v := in.Get("sort"); slices.Contains(sorts, v) {
		q.Set("sort", v)
	}
	p := &page{Title: "Projects", User: user}
	list, err := s.api.Projects(r.Context(), q)
	if err != nil {
		if StatusOf(err) == http.StatusUnprocessableEntity {
			// A query pantry refuses (a cursor from another search, a
			// malformed tag) is said in words over an empty list.
			formFailure(p, err)
			p.Error = "This search could not be run: " + strings.TrimSuffix(p.Error, ".") + ". Change it and search again."
			p.Data = directoryData{Query: q}
			s.render(w, r, http.StatusUnprocessableEntity, "projects", p)
			return
		}
		s.fail(w, r, user, err)
		return
	}
	tags, err := s.api.ProjectTags(r.Context())
	if err != nil {
		s.fail(w, r, user, err)
		return
	}
	d := directoryData{Query: q, Projects: list.Projects, Tags: tags}
	if list.NextCursor != nil {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("cursor", *list.NextCursor)
		d.More = next.Encode()
	}
	p.Data = d
	s.render(w, r, http.StatusOK, "projects", p)
}

// projectData is /projects/{slug}'s content.
type projectData struct {
	Project     Project
	Description template.HTML
	Starred     bool
}

// ugc is the policy the description passes through once more in parlor
// (pantry renders it safe already; a page never trusts another service's
// HTML on its word).
var ugc = bluemonday.UGCPolicy()

// projectPage is one project's public page.
func (s *server) projectPage(w http.ResponseWriter, r *http.Request) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	var user *Me
	if sess != nil {
		user = &sess.Me
	}
	slug := r.PathValue("slug")
	pr, movedTo, err := s.api.Project(r.Context(), slug)
	if err != nil {
		s.fail(w, r, user, err)
		return
	}
	if movedTo != "" {
		// A former slug: the page moved with the project.
		http.Redirect(w, r, "/projects/"+url.PathEscape(movedTo), http.StatusMovedPermanently)
		return
	}
	d := projectData{Project: pr, Description: template.HTML(ugc.Sanitize(pr.DescriptionHTML))} //nolint:gosec // sanitized just now
	if sess != nil {
		starred, err := s.api.StarredProjects(r.Context(), sess.Token)
		if err != nil {
			s.fail(w, r, user, err)
			return
		}
		d.Starred = slices.ContainsFunc(starred, func(p Project) bool { return p.ID == pr.ID })
	}
	s.render(w, r, http.StatusOK, "project", &page{Title: pr.Name, User: user, Notice: notice(r), Data: d})
}

// star stars or unstars a project and comes back to its page.
func (s *server) star(on bool) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		slug := r.PathValue("slug")
		if err := s.api.StarProject(r.Context(), sess.Token, slug, on); err != nil {
			s.fail(w, r, &sess.Me, err)
			return
		}
		done := "starred"
		if !on {
			done = "unstarred"
		}
		http.Redirect(w, r, "/projects/"+url.PathEscape(slug)+"?done="+done, http.StatusSeeOther)
	}
}

// accountProjectsData is the account's Projects tab.
type accountProjectsData struct {
	Projects []Project
	// CanPublish is true for owners and admins; members edit only.
	CanPublish bool
	// Editing is the project whose edit form is open, if any.
	Editing *Project
	// ShowForm is true when the page has a form: the edit, or the
	// publish form for owners and admins.
	ShowForm bool
	Uses     []string
}

// projectUses are the platform parts a project may say it uses.
var projectUses = []string{"platform", "identity", "courier", "kit"}

func (s *server) accountProjects(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderAccountProjects(w, r, sess, &page{Notice: notice(r)}, http.StatusOK, r.URL.Query().Get("edit"))
}

func (s *server) renderAccountProjects(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, editing string) {
	a, list, ok := withAccount(s, w, r, sess, s.api.AccountProjects)
	if !ok {
		return
	}
	d := accountProjectsData{Projects: list, CanPublish: a.Role == "owner" || a.Role == "admin", Uses: projectUses}
	if editing != "" {
		i := slices.IndexFunc(list, func(p Project) bool { return p.Slug == editing })
		if i < 0 {
			s.notFound(w, r, &sess.Me)
			return
		}
		d.Editing = &list[i]
		if p.Form == nil {
			p.Form = projectForm(list[i])
		}
	}
	d.ShowForm = d.Editing != nil || d.CanPublish
	p.Title, p.User, p.Account, p.Tab, p.Data = "Projects · "+a.Name, &sess.Me, a, "projects", d
	s.render(w, r, status, "account_projects", p)
}

// projectForm is a project as its edit form shows it.
func projectForm(p Project) map[string]string {
	f := map[string]string{"slug": p.Slug, "name": p.Name, "summary": p.Summary, "description": p.Description,
		"homepage_url": deref(p.HomepageURL), "repository_url": deref(p.RepositoryURL),
		"tags": strings.Join(p.Tags, ", "), "visibility": p.Visibility}
	for _, u := range p.Uses {
		f["uses_"+u] = "on"
	}
	return f
}

// deref is a nullable string's value, "" for null (also the pages'
// template function).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// projectInput reads the publish or edit form.
func projectInput(r *http.Request) (ProjectInput, map[string]string) {
	in := ProjectInput{
		Slug:          strings.TrimSpace(r.PostFormValue("slug")),
		Name:          strings.TrimSpace(r.PostFormValue("name")),
		Summary:       strings.TrimSpace(r.PostFormValue("summary")),
		Description:   r.PostFormValue("description"),
		HomepageURL:   strings.TrimSpace(r.PostFormValue("homepage_url")),
		RepositoryURL: strings.TrimSpace(r.PostFormValue("repository_url")),
		Tags:          []string{},
		Uses:          []string{},
		Visibility:    r.PostFormValue("visibility"),
	}
	form := map[string]string{"slug": in.Slug, "name": in.Name, "summary": in.Summary, "description": in.Description,
		"homepage_url": in.HomepageURL, "repository_url": in.RepositoryURL, "tags": r.PostFormValue("tags"), "visibility": in.Visibility}
	for t := range strings.FieldsFuncSeq(r.PostFormValue("tags"), func(c rune) bool { return c == ',' || c == ' ' }) {
		in.Tags = append(in.Tags, strings.ToLower(t))
	}
	for _, u := range projectUses {
		if r.PostFormValue("uses_"+u) != "" {
			in.Uses = append(in.Uses, u)
			form["uses_"+u] = "on"
		}
	}
	return in, form
}

// maxLogoBytes bounds a project's logo; logoTypes are the images taken.
const maxLogoBytes = 1 << 20

var logoTypes = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// logoPreset is the darkroom variant a logo is made from and shown as:
// the directory and the project's page link /v1/media/{id}/thumb.
const logoPreset = "thumb"

// logoOf makes the form's logo file, when one was chosen, public at
// darkroom as its thumb variant (publicVariant: never the file as it
// came) and returns the media's id. A file the platform does not take
// is a refusal in words for the logo field; err is the platform failing.
func (s *server) logoOf(r *http.Request, sess *session) (id, refusal string, err error) {
	img, refusal, err := imageOf(r, "logo", "The logo")
	if img == nil {
		return "", refusal, err
	}
	return s.publicVariant(r.Context(), sess, img, logoPreset, "logo")
}

// imageFile is an image a form carried, sniffed and bounded.
type imageFile struct {
	name, contentType string
	data              []byte
}

// imageOf reads the form's file field, when one was chosen: at most
// maxLogoBytes, one of logoTypes by its bytes, its name without path
// separators or control characters. Nil with a refusal in words (about
// noun) for a file the platform does not take, nil with neither when no
// file was chosen; err is the platform failing.
func imageOf(r *http.Request, field, noun string) (*imageFile, string, error) {
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 || r.MultipartForm.File[field][0].Size == 0 {
		return nil, "", nil
	}
	fh := r.MultipartForm.File[field][0]
	if fh.Size > maxLogoBytes {
		return nil, noun + " must be at most 1 MiB.", nil
	}
	f, err := fh.Open()
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLogoBytes+1))
	if err != nil {
		return nil, "", err
	}
	contentType := http.DetectContentType(data)
	if !slices.Contains(logoTypes, contentType) {
		return nil, noun + " must be a PNG, JPEG, WebP or GIF image.", nil
	}
	name := strings.Map(func(c rune) rune {
		if c < ' ' || c == '/' || c == '\\' || c == 0x7f {
			return -1
		}
		return c
	}, fh.Filename)
	if name == "" {
		name = field
	}
	return &imageFile{name: name, contentType: contentType, data: data}, "", nil
}

// withLogo puts the form's new logo, if any, into in; false when the
// page was answered (a refusal, or the platform failing).
func (s *server) withLogo(w http.ResponseWriter, r *http.Request, sess *session, in *ProjectInput, form map[string]string, editing string) bool {
	logo, refusal, err := s.logoOf(r, sess)
	switch {
	case err != nil:
		s.fail(w, r, &sess.Me, err)
		return false
	case refusal != "":
		p := &page{Form: form, Errors: map[string]string{"logo": refusal}, Error: "Please correct the fields marked below."}
		s.renderAccountProjects(w, r, sess, p, http.StatusUnprocessableEntity, editing)
		return false
	}
	in.LogoMediaID = logo
	return true
}

func (s *server) publishProject(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	in, form := projectInput(r)
	if !s.withLogo(w, r, sess, &in, form, "") {
		return
	}
	pr, err := s.api.PublishProject(r.Context(), sess.Token, id, in)
	if err != nil {
		s.dropNewLogo(r.Context(), sess, in)
		s.projectRefused(w, r, sess, err, form, "")
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/projects?done=project-published#"+url.QueryEscape(pr.Slug), http.StatusSeeOther)
}

func (s *server) editProject(w http.ResponseWriter, r *http.Request, sess *session) {
	id, slug := r.PathValue("id"), r.PathValue("slug")
	in, form := projectInput(r)
	old, err := s.accountProject(r.Context(), id, slug)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	if !s.withLogo(w, r, sess, &in, form, slug) {
		return
	}
	if _, err := s.api.UpdateProject(r.Context(), sess.Token, slug, in); err != nil {
		s.dropNewLogo(r.Context(), sess, in)
		s.projectRefused(w, r, sess, err, form, slug)
		return
	}
	if in.LogoMediaID != "" && old.LogoMediaID != nil {
		s.forgetMedia(r.Context(), sess, *old.LogoMediaID, "replaced logo")
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/projects?done=project-saved", http.StatusSeeOther)
}

func (s *server) deleteProject(w http.ResponseWriter, r *http.Request, sess *session) {
	id, slug := r.PathValue("id"), r.PathValue("slug")
	old, err := s.accountProject(r.Context(), id, slug)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	if err := s.api.DeleteProject(r.Context(), sess.Token, slug); err != nil {
		s.projectRefused(w, r, sess, err, nil, "")
		return
	}
	if old.LogoMediaID != nil {
		s.forgetMedia(r.Context(), sess, *old.LogoMediaID, "deleted project's logo")
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/projects?done=project-deleted", http.StatusSeeOther)
}

// dropNewLogo deletes the logo a refused write had uploaded: no project
// names it, so it would only take space.
func (s *server) dropNewLogo(ctx context.Context, sess *session, in ProjectInput) {
	if in.LogoMediaID != "" {
		s.forgetMedia(ctx, sess, in.LogoMediaID, "refused project's logo")
	}
}

// accountProject reads slug's project, making sure it is a project of
// the account the page is about, so a form of one account's page never
// changes another's project (pantry still decides whether the user may).
// A logo is deleted with the caller's token: darkroom deletes only the
// uploader's media, so another member's logo stays where it is.
func (s *server) accountProject(ctx context.Context, accountID, slug string) (Project, error) {
	pr, movedTo, err := s.api.Project(ctx, slug)
	if err != nil {
		return Project{}, err
	}
	if movedTo != "" || pr.AccountID != accountID {
		return Project{}, &APIError{Status: http.StatusNotFound, Code: "not_found"}
	}
	return pr, nil
}

// projectRefused re-renders the Projects tab with pantry's refusal and
// the form as it was sent.
func (s *server) projectRefused(w http.ResponseWriter, r *http.Request, sess *session, err error, form map[string]string, editing string) {
	if StatusOf(err) == http.StatusUnauthorized || StatusOf(err) == http.StatusNotFound {
		s.fail(w, r, &sess.Me, err)
		return
	}
	p := &page{Form: form}
	status := formFailure(p, err)
	if status == http.StatusServiceUnavailable {
		s.unavailable(w, r, &sess.Me)
		return
	}
	if CodeOf(err) == "slug_taken" {
		p.Error = "That address is taken by another project (or was one's before): choose another slug."
	}
	s.renderAccountProjects(w, r, sess, p, status, editing)
}
