package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
)

// DownloadBox is box's check for a download (boxclient implements it):
// may the caller, by their own token, fetch artifact at exactly version
// for accountID. Errors: box's refusals in keyholder's codes, unavailable.
type DownloadBox interface {
	Check(ctx context.Context, token, accountID, artifact, version string) (keyholder.Redemption, error)
}

// Files is what the registry holds of a release (registry.Upstream
// implements it). Errors: keyholder.ErrNoDownload, unavailable.
type Files interface {
	Release(ctx context.Context, repo, version string) (keyholder.Release, error)
	OpenBlob(ctx context.Context, method, repo, dgst, rangeHeader string) (*http.Response, error)
}

type downloads struct {
	svc    *keyholder.Service
	box    DownloadBox
	files  Files
	logger *slog.Logger
}

type fileJSON struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	MediaType string `json:"media_type"`
}

// release checks the request with box and reads the release it names.
// Everything that names no download is the same 404.
func (d *downloads) release(r *http.Request) (keyholder.Redemption, keyholder.Release, error) {
	accountID, repo, version := r.PathValue("account_id"), r.PathValue("repository"), r.PathValue("version")
	token := bearer(r)
	switch {
	case token == "":
		return keyholder.Redemption{}, keyholder.Release{}, errNoToken
	case !keyholder.ValidAccountID(accountID) || !keyholder.ValidRelease(repo, version):
		return keyholder.Redemption{}, keyholder.Release{}, keyholder.ErrNoDownload
	case d.box == nil || d.files == nil:
		return keyholder.Redemption{}, keyholder.Release{}, errNoIdentity
	}
	grant, err := d.box.Check(r.Context(), token, accountID, repo, version)
	if err != nil {
		return keyholder.Redemption{}, keyholder.Release{}, err
	}
	rel, err := d.files.Release(r.Context(), repo, version)
	if err != nil {
		d.logFailure(r, err)
		return keyholder.Redemption{}, keyholder.Release{}, err
	}
	return grant, rel, nil
}

func (d *downloads) logFailure(r *http.Request, err error) {
	if keyholder.IsUnavailable(err) {
		d.logger.WarnContext(r.Context(), "download: registry unavailable", "err", err.Error(), "path", r.URL.Path)
	}
}

// list is GET /v1/accounts/{id}/downloads/{repository}/{version}.
func (d *downloads) list(w http.ResponseWriter, r *http.Request) {
	_, rel, err := d.release(r)
	if err != nil {
		writeError(w, r, d.logger, err)
		return
	}
	files := make([]fileJSON, len(rel.Files))
	for i, f := range rel.Files {
		files[i] = fileJSON{Name: f.Name, Size: f.Size, SHA256: f.SHA256(), MediaType: f.MediaType}
	}
	w.Header().Set("Cache-Control", "private, no-store")
	httpx.WriteJSON(w, http.StatusOK, struct {
		Repository string     `json:"repository"`
		Version    string     `json:"version"`
		Digest     string     `json:"digest"`
		Files      []fileJSON `json:"files"`
	}{rel.Repository, rel.Version, rel.Digest, files})
}

// file is GET (or HEAD) …/{version}/files/{filename}: the file streamed
// from the registry after box's check, with its digest as ETag and
// Repr-Digest, Range passed on. A GET that starts the file (no Range, or
// one from byte 0) is a download, counted before any byte is sent; a
// failure to count it sends nothing.
func (d *downloads) file(w http.ResponseWriter, r *http.Request) {
	// A name with a path in it names no file; box is not asked.
	name := r.PathValue("filename")
	if !keyholder.ValidFileName(name) {
		writeError(w, r, d.logger, keyholder.ErrNoDownload)
		return
	}
	grant, rel, err := d.release(r)
	if err != nil {
		writeError(w, r, d.logger, err)
		return
	}
	f, ok := rel.File(name)
	if !ok {
		writeError(w, r, d.logger, keyholder.ErrNoDownload)
		return
	}
	etag := `"` + f.Digest + `"`
	rng := r.Header.Get("Range")
	if ir := r.Header.Get("If-Range"); ir != "" && ir != etag {
		rng = "" // the client's partial copy is of something else
	}
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		fileHeaders(w.Header(), f, etag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	resp, err := d.files.OpenBlob(r.Context(), r.Method, rel.Repository, f.Digest, rng)
	if err != nil {
		d.logFailure(r, err)
		writeError(w, r, d.logger, err)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if cr := resp.Header.Get("Content-Range"); cr != "" {
			h.Set("Content-Range", cr)
		}
		h.Set("Content-Length", "0")
		w.WriteHeader(resp.StatusCode)
		return
	}
	if r.Method == http.MethodGet && startsFile(resp) {
		if err := d.svc.RecordDownload(r.Context(), grant, rel, f); err != nil {
			writeError(w, r, d.logger, err)
			return
		}
	}
	fileHeaders(h, f, etag)
	for _, k := range []string{"Content-Length", "Content-Range"} {
		if v := resp.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	// A large file outlasts the server's write timeout; the copy is
	// bounded by the client instead.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if _, err := io.Copy(w, resp.Body); err != nil && !errors.Is(err, context.Canceled) {
		d.logger.WarnContext(r.Context(), "download stream ended early", "err", err.Error(), "digest", f.Digest)
	}
}

// startsFile reports whether the upstream's answer begins at the file's
// first byte: the whole file, or a range from byte 0.
func startsFile(resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK || strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes 0-")
}

// fileHeaders are a file's own headers: an attachment under its name, its
// SHA-256 as a strong ETag and as Repr-Digest (RFC 9530).
func fileHeaders(h http.Header, f keyholder.File, etag string) {
	h.Set("Content-Type", "application/octet-stream")
	cd := mime.FormatMediaType("attachment", map[string]string{"filename": f.Name})
	if cd == "" {
		cd = "attachment"
	}
	h.Set("Content-Disposition", cd)
	h.Set("ETag", etag)
	if sum, err := hex.DecodeString(f.SHA256()); err == nil {
		h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum)+":")
	}
	h.Set("Accept-Ranges", "bytes")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
}

// etagMatches reports whether an If-None-Match list names etag.
func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
