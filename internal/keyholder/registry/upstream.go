package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxManifestBytes caps a manifest read from the upstream (Distribution's
// own limit is 4 MiB).
const maxManifestBytes = 4 << 20

// maxNodes bounds the cache of resolved manifests; past it the cache starts
// over. Entries are keyed by digest, so they never go stale.
const maxNodes = 4096

// manifestAccept is every manifest type the front resolves.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}, ", ")

// Upstream is the registry keyholder fronts, reached with keyholder's own
// read credential (never shown to a client).
//
// It speaks the Distribution API itself rather than through
// go-containerregistry's remote package (which keyholder publish uses to
// push). The manifests and blobs it passes to clients must stream with
// the upstream's status and headers, which remote does not expose. For
// the tag and manifest reads that resolve what a credential reaches,
// remote would pick the scheme from the host, not from
// KEYHOLDER_REGISTRY_URL: name.Registry.Scheme answers "http" for any
// loopback, RFC 1918, localhost or .local host, so an upstream configured
// as https://10.0.0.5 would be read over plain HTTP with keyholder's
// credential in the clear. It would also read manifests up to 100 MiB
// where this caps them at Distribution's 4 MiB.
type Upstream struct {
	base       string
	user, pass string
	http       *http.Client

	mu    sync.Mutex
	nodes map[string]node

	refOff referrersAPIOff
}

// node is what one manifest references: child manifests (an index) and
// blobs (an image's config and layers, an artifact's blobs).
type node struct {
	manifests []string
	blobs     []string
	// subject is the manifest this one refers to (a signature's image),
	// "" when it is no referrer; artifactType is what the referrers list
	// reports for it (its artifactType, else its config's media type).
	subject      string
	artifactType string
}

// errUpstream is any upstream answer the front cannot pass on: an error
// status other than 404, a transport failure, a malformed manifest.
var errUpstream = errors.New("upstream registry failed")

// errNotFound is the upstream's 404.
var errNotFound = errors.New("upstream: not found")

// NewUpstream returns the upstream at baseURL (http or https), reached with
// user and pass when user is set.
func NewUpstream(baseURL, user, pass string) *Upstream {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = 30 * time.Second
	tr.MaxIdleConnsPerHost = 64
	// Layers are already compressed; asking for gzip would make the
	// transport decompress and drop Content-Length.
	tr.DisableCompression = true
	return &Upstream{
		base: strings.TrimRight(baseURL, "/"),
		user: user, pass: pass,
		http: &http.Client{
			Transport: tr,
			// A blob may redirect to storage; the standard client drops
			// Authorization when the host changes, so keyholder's upstream
			// credential is not sent elsewhere.
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 5 {
					return errors.New("too many redirects")
				}
				return nil
			},
		},
		nodes: map[string]node{},
	}
}

// Close releases idle connections.
func (u *Upstream) Close() { u.http.CloseIdleConnections() }

// do sends one request upstream for path with the given headers.
func (u *Upstream) do(ctx context.Context, method, path string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.base+path, nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if u.user != "" {
		req.SetBasicAuth(u.user, u.pass)
	}
	return u.http.Do(req)
}

// Ready reports whether the upstream answers GET /v2/ with 200 to
// keyholder's credential.
func (u *Upstream) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := u.do(ctx, http.MethodGet, "/v2/", nil)
	if err != nil {
		return redact(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upstream /v2/: %s", resp.Status)
	}
	return nil
}

// Tags lists every tag of repo, following the upstream's pages.
func (u *Upstream) Tags(ctx context.Context, repo string) ([]string, error) {
	var all []string
	next := "/v2/" + repo + "/tags/list?n=1000"
	for page := 0; next != "" && page < 1000; page++ {
		resp, err := u.do(ctx, http.MethodGet, next, http.Header{"Accept": {"application/json"}})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUpstream, redact(err))
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		if err != nil || resp.StatusCode != http.StatusOK || len(body) > maxManifestBytes {
			return nil, fmt.Errorf("%w: tags: status %d", errUpstream, resp.StatusCode)
		}
		var list struct {
			Tags []string `json:"tags"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("%w: tags: %v", errUpstream, err)
		}
		all = append(all, list.Tags...)
		next = nextLink(resp.Header.Get("Link"), repo)
	}
	return all, nil
}

// nextLink returns the path of a Link rel="next" header when it stays on
// the same repository's tag list, else "".
func nextLink(h, repo string) string {
	if h == "" || !strings.Contains(h, `rel="next"`) {
		return ""
	}
	start, end := strings.Index(h, "<"), strings.Index(h, ">")
	if start < 0 || end < start {
		return ""
	}
	l, err := url.Parse(h[start+1 : end])
	if err != nil || l.Path != "/v2/"+repo+"/tags/list" {
		return ""
	}
	return l.Path + "?" + l.RawQuery
}

// Manifest fetches repo's manifest ref (a tag or a digest) and returns its
// body, media type and the sha256 digest of the body.
func (u *Upstream) Manifest(ctx context.Context, repo, ref string) (body []byte, mediaType, digest string, err error) {
	resp, err := u.do(ctx, http.MethodGet, "/v2/"+repo+"/manifests/"+ref, http.Header{"Accept": {manifestAccept}})
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", errUpstream, redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, "", "", errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", "", fmt.Errorf("%w: manifest: status %d", errUpstream, resp.StatusCode)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil || len(body) > maxManifestBytes {
		return nil, "", "", fmt.Errorf("%w: manifest body", errUpstream)
	}
	sum := sha256.Sum256(body)
	return body, resp.Header.Get("Content-Type"), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// resolve returns what the manifest dgst of repo references, from the cache
// or the upstream.
func (u *Upstream) resolve(ctx context.Context, repo, dgst string) (node, error) {
	u.mu.Lock()
	n, ok := u.nodes[repo+"@"+dgst]
	u.mu.Unlock()
	if ok {
		return n, nil
	}
	body, _, got, err := u.Manifest(ctx, repo, dgst)
	if err != nil {
		return node{}, err
	}
	if got != dgst {
		return node{}, fmt.Errorf("%w: manifest %s has digest %s", errUpstream, dgst, got)
	}
	n, err = parseNode(body)
	if err != nil {
		return node{}, err
	}
	u.remember(repo, dgst, n)
	return n, nil
}

func (u *Upstream) remember(repo, dgst string, n node) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.nodes) >= maxNodes {
		clear(u.nodes)
	}
	u.nodes[repo+"@"+dgst] = n
}

// parseNode reads the references of an image manifest, an index or an
// artifact manifest. A subject is not followed: a referrer does not make
// what it refers to readable (the reach cache follows referrers of what
// is readable, the other way round).
func parseNode(body []byte) (node, error) {
	type desc struct {
		Digest    string `json:"digest"`
		MediaType string `json:"mediaType"`
	}
	var m struct {
		Manifests    []desc `json:"manifests"`
		Config       *desc  `json:"config"`
		Layers       []desc `json:"layers"`
		Blobs        []desc `json:"blobs"`
		Subject      *desc  `json:"subject"`
		ArtifactType string `json:"artifactType"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return node{}, fmt.Errorf("%w: manifest: %v", errUpstream, err)
	}
	n := node{artifactType: m.ArtifactType}
	if m.Subject != nil {
		n.subject = m.Subject.Digest
	}
	if n.artifactType == "" && m.Config != nil {
		n.artifactType = m.Config.MediaType
	}
	for _, d := range m.Manifests {
		n.manifests = append(n.manifests, d.Digest)
	}
	if m.Config != nil {
		n.blobs = append(n.blobs, m.Config.Digest)
	}
	for _, d := range append(m.Layers, m.Blobs...) {
		n.blobs = append(n.blobs, d.Digest)
	}
	return n, nil
}

// TagDigest returns the digest of the manifest repo's tag names.
func (u *Upstream) TagDigest(ctx context.Context, repo, tag string) (string, error) {
	resp, err := u.do(ctx, http.MethodHead, "/v2/"+repo+"/manifests/"+tag, http.Header{"Accept": {manifestAccept}})
	if err != nil {
		return "", fmt.Errorf("%w: %v", errUpstream, redact(err))
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", errNotFound
	}
	d := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || !IsDigest(d) {
		// Without a trustworthy header, fetch and hash the manifest.
		_, _, d, err = u.Manifest(ctx, repo, tag)
		if err != nil {
			return "", err
		}
	}
	return d, nil
}

// redact drops the URL that *url.Error carries: it may hold the upstream's
// credentials.
func redact(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("%s: %w", uerr.Op, uerr.Err)
	}
	return err
}

func sha256sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
