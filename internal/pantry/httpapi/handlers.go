package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/service"
)

// PublicMaxAge is how long a cache may keep a public read (pantry.md
// section 2).
const PublicMaxAge = 60 * time.Second

type handlers struct {
	svc    *pantry.Service
	errors service.Errors
}

func (h *handlers) fail(w http.ResponseWriter, r *http.Request, err error) { h.errors.Write(w, r, err) }

// bearer returns the request's bearer credential, or "".
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	token = strings.TrimSpace(token)
	if strings.ContainsAny(token, " \t") {
		return ""
	}
	return token
}

// projectJSON is a project as the API shows it.
type projectJSON struct {
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
	CreatedBy       *string   `json:"created_by"`
	Visibility      string    `json:"visibility"`
	Stars           int64     `json:"stars"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toJSON(p pantry.Project) projectJSON {
	return projectJSON{ID: p.ID, Slug: p.Slug, Name: p.Name, Summary: p.Summary, Description: p.Description,
		DescriptionHTML: p.DescriptionHTML, HomepageURL: orNull(p.HomepageURL), RepositoryURL: orNull(p.RepositoryURL),
		Tags: p.Tags, Uses: p.Uses, LogoMediaID: orNull(p.LogoMediaID), AccountID: p.AccountID,
		CreatedBy: orNull(p.CreatedBy), Visibility: p.Visibility, Stars: p.Stars, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func toJSONList(ps []pantry.Project) []projectJSON {
	out := make([]projectJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, toJSON(p))
	}
	return out
}

type projectBody struct {
	Project projectJSON `json:"project"`
}

// public answers a public read: encoded once, with a strong ETag of its
// bytes, Cache-Control, and 304 when the client holds those bytes.
func public(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // the shapes above always encode
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(PublicMaxAge.Seconds())))
	h.Set("Vary", "Accept-Encoding")
	if matches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

// matches reports whether an If-None-Match list names etag (weakly, as
// RFC 9110 section 13.1.2 compares for GET).
func matches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}

// private answers a write or a caller's own read: never cached.
func private(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, v)
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := pantry.Query{Q: v.Get("q"), Tag: v.Get("tag"), Uses: v.Get("uses"), Sort: v.Get("sort"), Cursor: v.Get("cursor")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			h.fail(w, r, &errs.Error{Code: pantry.CodeValidation, Message: "the query has invalid parameters",
				Fields: []errs.FieldError{{Field: "limit", Code: pantry.RuleInvalid}}})
			return
		}
		q.Limit = n
	}
	page, err := h.svc.List(r.Context(), q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	public(w, r, struct {
		Projects   []projectJSON `json:"projects"`
		NextCursor *string       `json:"next_cursor"`
	}{toJSONList(page.Projects), orNull(page.Next)})
}

func (h *handlers) get(w http.ResponseWriter, r *http.Request) {
	p, moved, err := h.svc.Get(r.Context(), r.PathValue("slug"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if moved {
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(PublicMaxAge.Seconds())))
		w.Header().Set("Location", "/v1/projects/"+url.PathEscape(p.Slug))
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	public(w, r, projectBody{toJSON(p)})
}

func (h *handlers) tags(w http.ResponseWriter, r *http.Request) {
	tags, err := h.svc.Tags(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	type tagJSON struct {
		Tag   string `json:"tag"`
		Count int64  `json:"count"`
	}
	out := make([]tagJSON, 0, len(tags))
	for _, t := range tags {
		out = append(out, tagJSON{t.Tag, t.Count})
	}
	public(w, r, struct {
		Tags []tagJSON `json:"tags"`
	}{out})
}

// createRequest is POST /v1/accounts/{id}/projects's body.
type createRequest struct {
	Slug          string   `json:"slug"`
	Name          string   `json:"name"`
	Summary       string   `json:"summary"`
	Description   string   `json:"description"`
	HomepageURL   string   `json:"homepage_url"`
	RepositoryURL string   `json:"repository_url"`
	Tags          []string `json:"tags"`
	Uses          []string `json:"uses"`
	LogoMediaID   string   `json:"logo_media_id"`
	Visibility    string   `json:"visibility"`
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) {
	if bearer(r) == "" {
		h.fail(w, r, errs.New(pantry.CodeUnauthenticated, pantry.MsgUnauthenticated))
		return
	}
	var in createRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.svc.Create(r.Context(), bearer(r), r.PathValue("account_id"), pantry.Input(in))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/projects/"+url.PathEscape(p.Slug))
	private(w, http.StatusCreated, projectBody{toJSON(p)})
}

// updateRequest is PATCH /v1/projects/{slug}'s body: absent fields stay.
type updateRequest struct {
	Slug          *string   `json:"slug"`
	Name          *string   `json:"name"`
	Summary       *string   `json:"summary"`
	Description   *string   `json:"description"`
	HomepageURL   *string   `json:"homepage_url"`
	RepositoryURL *string   `json:"repository_url"`
	Tags          *[]string `json:"tags"`
	Uses          *[]string `json:"uses"`
	LogoMediaID   *string   `json:"logo_media_id"`
	Visibility    *string   `json:"visibility"`
}

func (h *handlers) update(w http.ResponseWriter, r *http.Request) {
	if bearer(r) == "" {
		h.fail(w, r, errs.New(pantry.CodeUnauthenticated, pantry.MsgUnauthenticated))
		return
	}
	var in updateRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.svc.Update(r.Context(), bearer(r), r.PathValue("slug"), pantry.Patch(in))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	private(w, http.StatusOK, projectBody{toJSON(p)})
}

func (h *handlers) remove(w http.ResponseWriter, r *http.Request) {
	if err := h.svc.Delete(r.Context(), bearer(r), r.PathValue("slug")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

type starBody struct {
	Slug    string `json:"slug"`
	Stars   int64  `json:"stars"`
	Starred bool   `json:"starred"`
}

func (h *handlers) star(w http.ResponseWriter, r *http.Request)   { h.setStar(w, r, true) }
func (h *handlers) unstar(w http.ResponseWriter, r *http.Request) { h.setStar(w, r, false) }

func (h *handlers) setStar(w http.ResponseWriter, r *http.Request, on bool) {
	n, err := h.svc.Star(r.Context(), bearer(r), r.PathValue("slug"), on)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	private(w, http.StatusOK, starBody{Slug: r.PathValue("slug"), Stars: n, Starred: on})
}

func (h *handlers) accountProjects(w http.ResponseWriter, r *http.Request) {
	ps, err := h.svc.AccountProjects(r.Context(), bearer(r), r.PathValue("account_id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	private(w, http.StatusOK, struct {
		Projects []projectJSON `json:"projects"`
	}{toJSONList(ps)})
}

func (h *handlers) myStars(w http.ResponseWriter, r *http.Request) {
	ps, err := h.svc.MyStars(r.Context(), bearer(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	private(w, http.StatusOK, struct {
		Projects []projectJSON `json:"projects"`
	}{toJSONList(ps)})
}
