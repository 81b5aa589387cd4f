package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	orasremote "oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const (
	signatureType = "application/vnd.example.signature.v1"
	sbomType      = "application/spdx+json"
)

// upstreamRepo is repo at the upstream registry, pushed to without auth.
func upstreamRepo(t *testing.T, p *keyholdertest.Platform, repo string) *orasremote.Repository {
	t.Helper()
	r, err := orasremote.NewRepository(p.RegistryHost + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	// The embedded registry refuses deletes: the superseded fallback
	// index of the tag schema stays behind.
	r.SkipReferrersGC = true
	return r
}

// keyholderRepo is repo through keyholder with cred.
func keyholderRepo(t *testing.T, p *keyholdertest.Platform, repo string, cred keyholdertest.Credential) *orasremote.Repository {
	t.Helper()
	host := strings.TrimPrefix(p.KeyholderURL, "http://")
	r, err := orasremote.NewRepository(host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	r.Client = &auth.Client{Credential: auth.StaticCredential(host, auth.Credential{Username: cred.Username, Password: cred.Password})}
	return r
}

// attach pushes an artifact of artifactType with one layer holding body,
// whose subject is subject, and returns its manifest's descriptor.
func attach(t *testing.T, repo *orasremote.Repository, subject ocispec.Descriptor, artifactType string, body []byte) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	layer, err := oras.PushBytes(ctx, repo, artifactType+".layer", body)
	if err != nil {
		t.Fatalf("push layer: %v", err)
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{
		Subject: &subject, Layers: []ocispec.Descriptor{layer},
	})
	if err != nil {
		t.Fatalf("pack %s: %v", artifactType, err)
	}
	return desc
}

func resolve(t *testing.T, repo *orasremote.Repository, ref string) ocispec.Descriptor {
	t.Helper()
	d, err := repo.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatalf("resolve %s: %v", ref, err)
	}
	return d
}

// discover lists subject's referrers of artifactType ("" every type).
func discover(t *testing.T, repo *orasremote.Repository, subject ocispec.Descriptor, artifactType string) []ocispec.Descriptor {
	t.Helper()
	var out []ocispec.Descriptor
	err := repo.Referrers(context.Background(), subject, artifactType, func(ds []ocispec.Descriptor) error {
		out = append(out, ds...)
		return nil
	})
	if err != nil {
		t.Fatalf("referrers of %s: %v", subject.Digest, err)
	}
	return out
}

// TestReferrers: a signature and an SBOM attached to a published image are
// discovered and pulled through keyholder with oras-go, from an upstream
// with the referrers API and from one without it (the tag schema), by the
// API keyholder serves and by the fallback tag; a subject out of range,
// and the referrers of one, stay unknown.
func TestReferrers(t *testing.T) {
	for _, upstream := range []struct {
		name string
		api  bool
	}{{"ReferrersAPI", true}, {"TagSchema", false}} {
		t.Run(upstream.name, func(t *testing.T) {
			sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
				testReferrers(t, engine, upstream.api)
			})
		})
	}
}

func testReferrers(t *testing.T, engine sqldb.Engine, api bool) {
	ctx := context.Background()
	p := keyholdertest.Start(t, engine, keyholdertest.Options{ReferrersAPI: api})
	p.PushImage("platform", "1.2.0", 1024, 1)
	p.PushImage("platform", "2.0.0", 1024, 1)
	up := upstreamRepo(t, p, "platform")
	in, out := resolve(t, up, "1.2.0"), resolve(t, up, "2.0.0")
	sig := attach(t, up, in, signatureType, []byte("signature of 1.2.0"))
	sbom := attach(t, up, in, sbomType, []byte(`{"spdxVersion":"SPDX-2.3"}`))
	sigOfSBOM := attach(t, up, sbom, signatureType, []byte("signature of the sbom"))
	outSig := attach(t, up, out, signatureType, []byte("signature of 2.0.0"))
	_, cred := p.Entitled("buyer@example.com", "platform", "^1.2.0")

	for _, fallback := range []bool{false, true} {
		repo := keyholderRepo(t, p, "platform", cred)
		if fallback {
			// The client's own tag-schema discovery: it reads the
			// sha256-<hex> tag through keyholder.
			if err := repo.SetReferrersCapability(false); err != nil {
				t.Fatal(err)
			}
		}
		got := discover(t, repo, in, "")
		if !hasDigests(got, sig, sbom) || len(got) != 2 {
			t.Errorf("fallback %v: referrers of 1.2.0 = %v, want the signature and the SBOM", fallback, digests(got))
		}
		for _, d := range got {
			if d.Digest == sig.Digest && d.ArtifactType != signatureType {
				t.Errorf("fallback %v: signature's artifactType = %q, want %q", fallback, d.ArtifactType, signatureType)
			}
		}
		if got := discover(t, repo, in, sbomType); !hasDigests(got, sbom) || len(got) != 1 {
			t.Errorf("fallback %v: SBOM referrers = %v, want the SBOM", fallback, digests(got))
		}
		if got := discover(t, repo, sbom, ""); !hasDigests(got, sigOfSBOM) || len(got) != 1 {
			t.Errorf("fallback %v: referrers of the SBOM = %v, want its signature", fallback, digests(got))
		}
		// Pulling each: its manifest and its blobs.
		for _, d := range []ocispec.Descriptor{sig, sbom, sigOfSBOM} {
			dst := memory.New()
			if err := oras.CopyGraph(ctx, repo, dst, d, oras.DefaultCopyGraphOptions); err != nil {
				t.Fatalf("fallback %v: pull %s: %v", fallback, d.Digest, err)
			}
		}
		if fallback {
			if got := discover(t, repo, out, ""); len(got) != 0 {
				t.Errorf("referrers of 2.0.0 by tag schema = %v, want none", digests(got))
			}
		}
	}
	layer := pullLayer(t, keyholderRepo(t, p, "platform", cred), sbom)
	if string(layer) != `{"spdxVersion":"SPDX-2.3"}` {
		t.Errorf("SBOM pulled through keyholder = %q", layer)
	}

	base := p.KeyholderURL + "/v2/platform/"
	outLayer := manifestLayer(t, up, outSig)
	for _, tt := range []struct {
		name, path string
		want       int
	}{
		{"OutOfRangeSubject", "referrers/" + out.Digest.String(), http.StatusNotFound},
		{"OutOfRangeFallbackTag", "manifests/sha256-" + out.Digest.Encoded(), http.StatusNotFound},
		{"OutOfRangeReferrer", "manifests/" + outSig.Digest.String(), http.StatusNotFound},
		{"OutOfRangeReferrerBlob", "blobs/" + outLayer, http.StatusNotFound},
		{"UnknownSubject", "referrers/sha256:" + strings.Repeat("0", 64), http.StatusNotFound},
		{"MalformedSubject", "referrers/sha256:abc", http.StatusBadRequest},
		{"InRange", "referrers/" + in.Digest.String(), http.StatusOK},
	} {
		if got := send(t, "GET", base+tt.path, &cred, nil); got.status != tt.want {
			t.Errorf("%s: GET %s = %d, want %d (%s)", tt.name, tt.path, got.status, tt.want, got.body)
		}
	}
	if got := send(t, "GET", base+"referrers/"+in.Digest.String(), nil, nil); got.status != http.StatusUnauthorized {
		t.Errorf("referrers without a credential = %d, want 401", got.status)
	}
	got := send(t, "GET", base+"referrers/"+in.Digest.String()+"?artifactType="+url.QueryEscape(sbomType), &cred, nil)
	var idx ocispec.Index
	if err := json.Unmarshal(got.body, &idx); err != nil || got.header.Get("OCI-Filters-Applied") != "artifactType" ||
		got.header.Get("Content-Type") != ocispec.MediaTypeImageIndex || len(idx.Manifests) != 1 {
		t.Errorf("filtered referrers = %s %v; want one SBOM, filter applied", got.body, got.header)
	}
}

// pullLayer fetches the first layer of the artifact d from repo.
func pullLayer(t *testing.T, repo *orasremote.Repository, d ocispec.Descriptor) []byte {
	t.Helper()
	ctx := context.Background()
	raw, err := content.FetchAll(ctx, repo, d)
	if err != nil {
		t.Fatalf("fetch manifest: %v", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) == 0 {
		t.Fatalf("manifest %s: %v", raw, err)
	}
	b, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		t.Fatalf("fetch layer: %v", err)
	}
	return b
}

// manifestLayer is the digest of the first layer of the artifact d.
func manifestLayer(t *testing.T, repo *orasremote.Repository, d ocispec.Descriptor) string {
	t.Helper()
	raw, err := content.FetchAll(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&m); err != nil || len(m.Layers) == 0 {
		t.Fatalf("manifest %s: %v", raw, err)
	}
	return m.Layers[0].Digest.String()
}

func digests(ds []ocispec.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Digest.String()
	}
	return out
}

func hasDigests(got []ocispec.Descriptor, want ...ocispec.Descriptor) bool {
	have := digests(got)
	for _, w := range want {
		if !slices.Contains(have, w.Digest.String()) {
			return false
		}
	}
	return true
}
