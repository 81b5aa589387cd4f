package httpapi

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/service"
)

// Cache-Control of media reads (darkroom.md section 3): public media are
// immutable (a new file is new media); private media are revalidated.
const (
	CachePublic  = "public, max-age=31536000, immutable"
	CachePrivate = "private, no-cache"
)

type handlers struct {
	svc    *darkroom.Service
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

// principal resolves the signed-in caller, or writes the refusal.
func (h *handlers) principal(w http.ResponseWriter, r *http.Request) (darkroom.Principal, bool) {
	p, err := h.svc.Authenticate(r.Context(), bearer(r))
	if err != nil {
		h.fail(w, r, err)
		return p, false
	}
	return p, true
}

// viewer is a read's caller: a bearer is verified (a bad one is 401), a
// link's exp and sig are taken as they come, and no credential is anyone.
func (h *handlers) viewer(w http.ResponseWriter, r *http.Request) (darkroom.Viewer, bool) {
	var v darkroom.Viewer
	if r.Header.Get("Authorization") != "" {
		p, ok := h.principal(w, r)
		if !ok {
			return v, false
		}
		v.UserID = p.UserID
	}
	q := r.URL.Query()
	if sig := q.Get("sig"); sig != "" {
		exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
		if err != nil {
			h.fail(w, r, errs.New(darkroom.CodeNotFound, darkroom.MsgNotFound))
			return v, false
		}
		v.Link = darkroom.Link{Exp: exp, Sig: sig}
	}
	return v, true
}

func private(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, v)
}

type mediaJSON struct {
	ID          string    `json:"id"`
	OwnerID     string    `json:"owner_id"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
	Visibility  string    `json:"visibility"`
	CreatedAt   time.Time `json:"created_at"`
}

type mediaBody struct {
	Media mediaJSON `json:"media"`
}

func toJSON(m darkroom.Media) mediaBody {
	return mediaBody{mediaJSON{ID: m.ID, OwnerID: m.OwnerID, Filename: m.Filename, ContentType: m.ContentType, Size: m.Size,
		SHA256: m.SHA256, Width: m.Width, Height: m.Height, Visibility: m.Visibility, CreatedAt: m.CreatedAt.UTC()}}
}

type uploadRequest struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Visibility  string `json:"visibility"`
}

func (h *handlers) createUpload(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(w, r)
	if !ok {
		return
	}
	var req uploadRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Visibility == "" {
		req.Visibility = darkroom.VisibilityPrivate
	}
	u, put, exp, err := h.svc.CreateUpload(r.Context(), p, darkroom.UploadInput{Filename: req.Filename,
		ContentType: req.ContentType, Size: req.Size, SHA256: req.SHA256, Visibility: req.Visibility})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	type uploadJSON struct {
		ID        string            `json:"id"`
		URL       string            `json:"url"`
		Method    string            `json:"method"`
		Headers   map[string]string `json:"headers"`
		ExpiresAt time.Time         `json:"expires_at"`
	}
	private(w, http.StatusCreated, struct {
		Upload uploadJSON `json:"upload"`
	}{uploadJSON{ID: u.ID, URL: put.URL, Method: http.MethodPut, Headers: put.Headers, ExpiresAt: exp.UTC()}})
}

func (h *handlers) complete(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(w, r)
	if !ok {
		return
	}
	m, err := h.svc.Complete(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	private(w, http.StatusOK, toJSON(m))
}

func (h *handlers) direct(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(w, r)
	if !ok {
		return
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		h.fail(w, r, errs.New(darkroom.CodeUnsupportedType, "Content-Type must name the file's type"))
		return
	}
	q := r.URL.Query()
	vis := q.Get("visibility")
	if vis == "" {
		vis = darkroom.VisibilityPrivate
	}
	m, err := h.svc.Direct(r.Context(), p, darkroom.DirectInput{ContentType: ct, Filename: q.Get("filename"),
		Visibility: vis, Body: r.Body})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	private(w, http.StatusCreated, toJSON(m))
}

// serve streams obj with its ETag (the SHA-256) and caching by
// visibility; http.ServeContent answers Range, If-None-Match and HEAD.
func serve(w http.ResponseWriter, r *http.Request, m darkroom.Media, contentType, sha string, modified time.Time, obj darkroom.Object) {
	defer obj.Close()
	hd := w.Header()
	hd.Set("Content-Type", contentType)
	hd.Set("ETag", `"`+sha+`"`)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if m.Visibility == darkroom.VisibilityPublic {
		hd.Set("Cache-Control", CachePublic)
	} else {
		hd.Set("Cache-Control", CachePrivate)
	}
	http.ServeContent(w, r, "", modified, obj)
}

func (h *handlers) original(w http.ResponseWriter, r *http.Request) {
	v, ok := h.viewer(w, r)
	if !ok {
		return
	}
	m, obj, err := h.svc.Open(r.Context(), v, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if m.Filename != "" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": m.Filename}))
	}
	serve(w, r, m, m.ContentType, m.SHA256, m.CreatedAt, obj)
}

// acceptsWebP reports whether Accept names image/webp (or image/*) with a
// non-zero q.
func acceptsWebP(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (mt != "image/webp") {
			continue
		}
		if q, err := strconv.ParseFloat(params["q"], 64); params["q"] == "" || (err == nil && q > 0) {
			return true
		}
	}
	return false
}

func (h *handlers) variant(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Vary", "Accept")
	v, ok := h.viewer(w, r)
	if !ok {
		return
	}
	m, vr, obj, err := h.svc.OpenVariant(r.Context(), v, r.PathValue("id"), r.PathValue("preset"), acceptsWebP(r.Header.Get("Accept")))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	serve(w, r, m, vr.ContentType, vr.SHA256, vr.CreatedAt, obj)
}

type linkRequest struct {
	TTL int64 `json:"ttl"`
}

func (h *handlers) link(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(w, r)
	if !ok {
		return
	}
	var req linkRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	l, exp, err := h.svc.CreateLink(r.Context(), p, id, time.Duration(req.TTL)*time.Second)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := url.Values{"exp": {strconv.FormatInt(l.Exp, 10)}, "sig": {l.Sig}}
	type linkJSON struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	private(w, http.StatusCreated, struct {
		Link linkJSON `json:"link"`
	}{linkJSON{URL: "/v1/media/" + url.PathEscape(id) + "?" + q.Encode(), ExpiresAt: exp.UTC()}})
}

func (h *handlers) remove(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(w, r)
	if !ok {
		return
	}
	if err := h.svc.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
