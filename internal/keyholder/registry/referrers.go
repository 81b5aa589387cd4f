package registry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/platformco/platform/internal/semver"
)

// Referrers (OCI Distribution 1.1): the manifests whose subject is a
// digest (signatures, SBOMs, attestations). The upstream lists them by its
// referrers API or, without one, in an index tagged sha256-<hex> (the
// referrers tag schema). Keyholder serves the API itself either way, for
// a subject the credential may read; the reach cache makes the referrers
// of every readable manifest readable with their blobs.

// indexMediaType is the OCI image index, the referrers list's type.
const indexMediaType = "application/vnd.oci.image.index.v1+json"

// Bounds on following referrers in one tag's resolution: how deep a
// referrer of a referrer goes, and how many subjects are asked about.
const (
	maxReferrerDepth   = 3
	maxReferrerLookups = 256
)

// referrersAPIRetry is how long the upstream is taken at its word that it
// has no referrers API before it is asked again.
const referrersAPIRetry = 10 * time.Minute

// descriptor is one entry of a referrers list (OCI descriptor fields a
// client reads).
type descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// referrerList is what the upstream lists as subject's referrers, and the
// digest of the fallback tag's index when the list came from it.
type referrerList struct {
	descs    []descriptor
	fallback string
}

// referrersAPIOff holds, per Upstream, until when the API is not asked.
type referrersAPIOff struct{ until atomic.Int64 }

// Referrers lists the upstream's referrers of repo's manifest subject: by
// the referrers API, or by the fallback tag when the upstream has no API.
// No referrers is an empty list; an upstream failure is errUpstream.
func (u *Upstream) Referrers(ctx context.Context, repo, subject string) (referrerList, error) {
	if time.Now().UnixNano() >= u.refOff.until.Load() {
		resp, err := u.do(ctx, http.MethodGet, "/v2/"+repo+"/referrers/"+subject, http.Header{"Accept": {indexMediaType}})
		if err != nil {
			return referrerList{}, fmt.Errorf("%w: %v", errUpstream, redact(err))
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			if err != nil || len(body) > maxManifestBytes {
				return referrerList{}, fmt.Errorf("%w: referrers body", errUpstream)
			}
			descs, err := parseIndex(body)
			return referrerList{descs: descs}, err
		case resp.StatusCode >= 500:
			return referrerList{}, fmt.Errorf("%w: referrers: status %d", errUpstream, resp.StatusCode)
		}
		// 404, 405, 400: a registry without the API (Distribution
		// answers its unknown routes so).
		u.refOff.until.Store(time.Now().Add(referrersAPIRetry).UnixNano())
	}
	body, _, dgst, err := u.Manifest(ctx, repo, FallbackTagOf(subject))
	if errors.Is(err, errNotFound) {
		return referrerList{}, nil
	}
	if err != nil {
		return referrerList{}, err
	}
	descs, err := parseIndex(body)
	return referrerList{descs: descs, fallback: dgst}, err
}

func parseIndex(body []byte) ([]descriptor, error) {
	var idx struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("%w: referrers index: %v", errUpstream, err)
	}
	return idx.Manifests, nil
}

// referrersOf is subject's referrers as keyholder serves them: only
// manifests the upstream has whose subject really is subject (a fallback
// index is an ordinary, writable tag), each with the artifact type its
// manifest declares.
func (u *Upstream) referrersOf(ctx context.Context, repo, subject string) ([]descriptor, string, error) {
	list, err := u.Referrers(ctx, repo, subject)
	if err != nil {
		return nil, "", err
	}
	out := make([]descriptor, 0, len(list.descs))
	for _, d := range list.descs {
		if !IsDigest(d.Digest) {
			continue
		}
		n, err := u.resolve(ctx, repo, d.Digest)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if n.subject != subject {
			continue
		}
		if n.artifactType != "" {
			d.ArtifactType = n.artifactType
		}
		out = append(out, d)
	}
	return out, list.fallback, nil
}

// walkReferrers adds to set the referrers of every manifest in it, their
// blobs and children, and the referrers of those in turn, with the
// fallback indexes that listed them.
func (u *Upstream) walkReferrers(ctx context.Context, repo string, set *reachSet) error {
	type item struct {
		dgst  string
		depth int
	}
	var queue []item
	for key, k := range set.digests {
		if k&reachManifest != 0 {
			queue = append(queue, item{"sha256:" + hex.EncodeToString(key[:]), 0})
		}
	}
	seen := map[string]bool{}
	for lookups := 0; len(queue) > 0 && lookups < maxReferrerLookups; lookups++ {
		it := queue[0]
		queue = queue[1:]
		if seen[it.dgst] || it.depth > maxReferrerDepth {
			continue
		}
		seen[it.dgst] = true
		descs, fallback, err := u.referrersOf(ctx, repo, it.dgst)
		if err != nil {
			return err
		}
		if fallback != "" {
			set.add(fallback, reachManifest)
		}
		for _, d := range descs {
			if err := u.walk(ctx, repo, d.Digest, set, 0); err != nil {
				return err
			}
			queue = append(queue, item{d.Digest, it.depth + 1})
		}
	}
	return nil
}

// referrers answers GET /v2/{name}/referrers/{digest} for a subject the
// credential may read, filtered by artifactType when asked; any other
// subject is 404.
func (f *Front) referrers(w http.ResponseWriter, r *http.Request, route Route, rng semver.Range) {
	if _, ok := f.readable(w, r, route.Name, rng, route.Reference, false); !ok {
		return
	}
	descs, _, err := f.upstream.referrersOf(r.Context(), route.Name, route.Reference)
	if err != nil {
		f.upstreamFailed(w, r, err, codeManifestUnknown)
		return
	}
	h := w.Header()
	if types := r.URL.Query()["artifactType"]; len(types) > 0 {
		descs = slices.DeleteFunc(descs, func(d descriptor) bool { return !slices.Contains(types, d.ArtifactType) })
		h.Set("OCI-Filters-Applied", "artifactType")
	}
	body, _ := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{2, indexMediaType, descs})
	h.Set("Docker-Distribution-API-Version", "registry/2.0")
	h.Set("Content-Type", indexMediaType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
