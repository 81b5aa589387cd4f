package registry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/semver"
)

// OCI error codes the front answers with (Distribution spec).
const (
	codeUnauthorized    = "UNAUTHORIZED"
	codeDenied          = "DENIED"
	codeNameUnknown     = "NAME_UNKNOWN"
	codeManifestUnknown = "MANIFEST_UNKNOWN"
	codeBlobUnknown     = "BLOB_UNKNOWN"
	codeDigestInvalid   = "DIGEST_INVALID"
	codeUnsupported     = "UNSUPPORTED"
	codeUnavailable     = "UNAVAILABLE"
)

// passHeaders are the upstream response headers a client may see.
var passHeaders = []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges",
	"Docker-Content-Digest", "Etag", "Last-Modified", "Cache-Control"}

// Front serves /v2/.
type Front struct {
	svc      *keyholder.Service
	upstream *Upstream
	reach    *reachCache
	realm    string
	logger   *slog.Logger
}

// New returns the /v2 front. realm names the Basic challenge (the public
// registry host).
func New(svc *keyholder.Service, upstream *Upstream, realm string, logger *slog.Logger) *Front {
	return &Front{svc: svc, upstream: upstream, reach: newReachCache(upstream), realm: realm, logger: logger}
}

type ociError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Detail  any    `json:"detail"`
}

func (f *Front) fail(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	h := w.Header()
	h.Set("Docker-Distribution-API-Version", "registry/2.0")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="`+strings.ReplaceAll(f.realm, `"`, "")+`"`)
	}
	if r.Method == http.MethodHead {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		return
	}
	httpx.WriteJSON(w, status, struct {
		Errors []ociError `json:"errors"`
	}{[]ociError{{Code: code, Message: message, Detail: map[string]any{}}}})
}

// upstreamFailed answers a failed upstream call: its 404 as the route's
// unknown code, anything else as 502 with nothing of the upstream in it.
func (f *Front) upstreamFailed(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	if errors.Is(err, errNotFound) {
		f.fail(w, r, http.StatusNotFound, notFound, "not found")
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	f.logger.WarnContext(r.Context(), "upstream registry failed", "err", err.Error(),
		"path", r.URL.Path)
	f.fail(w, r, http.StatusBadGateway, codeUnavailable, "upstream registry unavailable")
}

func (f *Front) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	f.logger.WarnContext(r.Context(), "registry front: dependency unavailable", "err", err.Error(),
		"path", r.URL.Path)
	w.Header().Set("Retry-After", "1")
	f.fail(w, r, http.StatusServiceUnavailable, codeUnavailable, "service temporarily unavailable")
}

// Waiting answers every /v2 path 503 UNAVAILABLE, for the time before
// keyholder's database first answers (sqldb.Gate).
func Waiting(realm string) http.Handler {
	f := &Front{realm: realm}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		f.fail(w, r, http.StatusServiceUnavailable, codeUnavailable, "service temporarily unavailable")
	})
}

// ServeHTTP implements http.Handler for every /v2 path.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A write never reaches the upstream, whoever asks.
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		f.fail(w, r, http.StatusUnauthorized, codeDenied, "this registry is read-only")
		return
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		f.fail(w, r, http.StatusUnauthorized, codeUnauthorized, "authentication required")
		return
	}
	cred, err := f.svc.Authenticate(r.Context(), user, pass)
	if err != nil {
		if errs.Code(err) == keyholder.CodeUnauthenticated {
			f.fail(w, r, http.StatusUnauthorized, codeUnauthorized, "authentication required")
			return
		}
		f.unavailable(w, r, err)
		return
	}
	route, ok := ParsePath(r.URL.EscapedPath())
	if !ok {
		f.fail(w, r, http.StatusNotFound, codeNameUnknown, "repository name not known to registry")
		return
	}
	if route.Kind == kindBase {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		httpx.WriteJSON(w, http.StatusOK, struct{}{})
		return
	}
	// Another repository gets the same answer whether it exists or not.
	if route.Name != cred.Repository {
		f.fail(w, r, http.StatusNotFound, codeNameUnknown, "repository name not known to registry")
		return
	}
	switch {
	case route.Refused == RefInvalid:
		f.fail(w, r, http.StatusBadRequest, codeDigestInvalid, "the digest is not a valid sha256 digest")
		return
	case route.Refused == RefUnknown && route.Kind == kindBlob:
		f.fail(w, r, http.StatusNotFound, codeBlobUnknown, "blob unknown to registry")
		return
	case route.Refused == RefUnknown:
		f.fail(w, r, http.StatusNotFound, codeManifestUnknown, "manifest unknown")
		return
	}
	rng, err := cred.Range()
	if err != nil {
		f.unavailable(w, r, err)
		return
	}
	switch route.Kind {
	case kindTags:
		f.tags(w, r, route, rng)
	case kindManifest:
		f.manifest(w, r, route, cred, rng)
	case kindBlob:
		f.blob(w, r, route, rng)
	case kindReferrers:
		f.referrers(w, r, route, rng)
	}
}

// inRange returns repo's tags that are versions inside rng, newest first.
func inRange(ctx context.Context, u *Upstream, repo string, rng semver.Range) ([]string, error) {
	all, err := u.Tags(ctx, repo)
	if err != nil {
		return nil, err
	}
	type tv struct {
		tag string
		v   semver.Version
	}
	var in []tv
	for _, t := range all {
		if v, err := semver.ParseVersion(t); err == nil && v.String() == t && rng.Contains(v) {
			in = append(in, tv{t, v})
		}
	}
	slices.SortFunc(in, func(a, b tv) int { return b.v.Compare(a.v) })
	out := make([]string, len(in))
	for i, x := range in {
		out[i] = x.tag
	}
	return out, nil
}

// tagAllowed reports whether tag is a version (exactly X.Y.Z) inside rng.
func tagAllowed(tag string, rng semver.Range) bool {
	v, err := semver.ParseVersion(tag)
	return err == nil && v.String() == tag && rng.Contains(v)
}

func (f *Front) tags(w http.ResponseWriter, r *http.Request, route Route, rng semver.Range) {
	q := r.URL.Query()
	n := -1
	if s := q.Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			f.fail(w, r, http.StatusBadRequest, codeUnsupported, "n must be a whole number")
			return
		}
		n = v
	}
	tags, err := inRange(r.Context(), f.upstream, route.Name, rng)
	if err != nil {
		f.upstreamFailed(w, r, err, codeNameUnknown)
		return
	}
	// The Distribution spec lists tags in lexical order, and last
	// continues after a tag in that order.
	slices.Sort(tags)
	if last := q.Get("last"); last != "" {
		i, _ := slices.BinarySearch(tags, last)
		for i < len(tags) && tags[i] <= last {
			i++
		}
		tags = tags[i:]
	}
	if n >= 0 && len(tags) > n {
		tags = tags[:n]
		if n > 0 {
			next := url.Values{"n": {strconv.Itoa(n)}, "last": {tags[n-1]}}
			w.Header().Set("Link", `</v2/`+route.Name+`/tags/list?`+next.Encode()+`>; rel="next"`)
		}
	}
	if tags == nil {
		tags = []string{}
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	httpx.WriteJSON(w, http.StatusOK, struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{route.Name, tags})
}

// manifest serves a manifest by an in-range tag, a digest reachable from
// one, or the referrers fallback tag (sha256-<hex>) of such a digest. A GET is a pull, counted before it is served: by tag, or by
// the digest a tag names itself (how containerd and oras pull: HEAD the
// tag, then GET its digest), under that tag. A HEAD delivers nothing and
// counts nothing, nor does a GET of an index's child.
func (f *Front) manifest(w http.ResponseWriter, r *http.Request, route Route, cred keyholder.Credential, rng semver.Range) {
	pulled := ""
	if subject, ok := FallbackSubject(route.Reference); ok {
		// The referrers tag schema's index of a readable subject: no
		// version, no pull.
		if _, ok := f.readable(w, r, route.Name, rng, subject, false); !ok {
			return
		}
	} else if !IsDigest(route.Reference) {
		if !tagAllowed(route.Reference, rng) {
			f.fail(w, r, http.StatusNotFound, codeManifestUnknown, "manifest unknown")
			return
		}
		pulled = route.Reference
	} else {
		set, ok := f.readable(w, r, route.Name, rng, route.Reference, false)
		if !ok {
			return
		}
		pulled = set.tagOf(route.Reference)
	}
	header := http.Header{}
	if a := r.Header.Values("Accept"); len(a) > 0 {
		header["Accept"] = a
	} else {
		header.Set("Accept", manifestAccept)
	}
	resp, err := f.upstream.do(r.Context(), r.Method, "/v2/"+route.Name+"/manifests/"+route.Reference, header)
	if err != nil {
		f.upstreamFailed(w, r, redact(err), codeManifestUnknown)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		f.upstreamStatus(w, r, resp, codeManifestUnknown)
		return
	}
	if r.Method == http.MethodHead {
		copyHeaders(w, resp)
		w.WriteHeader(http.StatusOK)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil || len(body) > maxManifestBytes {
		f.upstreamFailed(w, r, errUpstream, codeManifestUnknown)
		return
	}
	if pulled != "" {
		// An uncounted delivery is what the record exists to prevent.
		if err := f.svc.RecordPull(r.Context(), cred, pulled, digestOf(body)); err != nil {
			f.unavailable(w, r, err)
			return
		}
	}
	copyHeaders(w, resp)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// readable reports whether dgst (a manifest, or a blob when blob) hangs
// off one of repo's tags inside rng, with the set that says so; when it
// does not, or the upstream fails, it has answered the request.
func (f *Front) readable(w http.ResponseWriter, r *http.Request, repo string, rng semver.Range, dgst string, blob bool) (*reachSet, bool) {
	code, message := codeManifestUnknown, "manifest unknown"
	if blob {
		code, message = codeBlobUnknown, "blob unknown to registry"
	}
	set, ok, err := f.reach.find(r.Context(), repo, rng, dgst, blob)
	if err != nil && !errors.Is(err, errNotFound) {
		f.upstreamFailed(w, r, err, code)
		return nil, false
	}
	if !ok {
		f.fail(w, r, http.StatusNotFound, code, message)
		return nil, false
	}
	return set, true
}

func (f *Front) blob(w http.ResponseWriter, r *http.Request, route Route, rng semver.Range) {
	if _, ok := f.readable(w, r, route.Name, rng, route.Reference, true); !ok {
		return
	}
	header := http.Header{}
	if rg := r.Header.Get("Range"); rg != "" {
		header.Set("Range", rg)
	}
	resp, err := f.upstream.do(r.Context(), r.Method, "/v2/"+route.Name+"/blobs/"+route.Reference, header)
	if err != nil {
		f.upstreamFailed(w, r, redact(err), codeBlobUnknown)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			// The range and the blob's size, and no body: the
			// upstream's Content-Length is its own body's, which is
			// not sent on.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			h := w.Header()
			if cr := resp.Header.Get("Content-Range"); cr != "" {
				h.Set("Content-Range", cr)
			}
			h.Set("Docker-Distribution-API-Version", "registry/2.0")
			h.Set("Content-Length", "0")
			w.WriteHeader(resp.StatusCode)
			return
		}
		f.upstreamStatus(w, r, resp, codeBlobUnknown)
		return
	}
	copyHeaders(w, resp)
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	// A large layer outlasts the server's write timeout; the copy is
	// bounded by the client instead, and streams in fixed-size chunks.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if _, err := io.Copy(w, resp.Body); err != nil && !errors.Is(err, context.Canceled) {
		f.logger.WarnContext(r.Context(), "blob stream ended early", "err", redact(err).Error(),
			"digest", route.Reference)
	}
}

// upstreamStatus answers an upstream status other than success.
func (f *Front) upstreamStatus(w http.ResponseWriter, r *http.Request, resp *http.Response, notFound string) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusNotFound {
		f.fail(w, r, http.StatusNotFound, notFound, "not found")
		return
	}
	f.upstreamFailed(w, r, errors.New("upstream status "+strconv.Itoa(resp.StatusCode)), notFound)
}

func copyHeaders(w http.ResponseWriter, resp *http.Response) {
	h := w.Header()
	for _, k := range passHeaders {
		if v := resp.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	h.Set("Docker-Distribution-API-Version", "registry/2.0")
}

// digestOf is the sha256 digest of body in the OCI form.
func digestOf(body []byte) string {
	sum := sha256sum(body)
	return "sha256:" + sum
}
