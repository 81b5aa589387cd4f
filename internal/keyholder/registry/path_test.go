package registry_test

import (
	"strings"
	"testing"

	"github.com/platformco/platform/internal/keyholder/registry"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParsePath(t *testing.T) {
	tests := []struct {
		name, path string
		ok         bool
		kind, repo string
		wantRef    string
		refused    string
	}{
		{"Base", "/v2/", true, "base", "", "", ""},
		{"Tags", "/v2/platform/tags/list", true, "tags", "platform", "", ""},
		{"ManifestByTag", "/v2/platform/manifests/1.2.3", true, "manifest", "platform", "1.2.3", ""},
		{"ManifestByDigest", "/v2/platform/manifests/" + digest, true, "manifest", "platform", digest, ""},
		{"Blob", "/v2/platform/blobs/" + digest, true, "blob", "platform", digest, ""},
		{"Referrers", "/v2/platform/referrers/" + digest, true, "referrers", "platform", digest, ""},
		{"ReferrersMalformed", "/v2/platform/referrers/sha256:abc", true, "referrers", "platform", "", registry.RefInvalid},
		{"ReferrersByTag", "/v2/platform/referrers/1.2.3", true, "referrers", "platform", "", registry.RefInvalid},
		{"ReferrersEmpty", "/v2/platform/referrers/", false, "", "", "", ""},
		{"NestedName", "/v2/team/platform/tags/list", true, "tags", "team/platform", "", ""},
		{"DotDot", "/v2/platform/../kit/tags/list", false, "", "", "", ""},
		{"Dot", "/v2/./platform/tags/list", false, "", "", "", ""},
		{"EncodedSlash", "/v2/platform%2F..%2Fkit/tags/list", false, "", "", "", ""},
		{"EncodedDot", "/v2/%2e%2e/tags/list", false, "", "", "", ""},
		{"Uppercase", "/v2/Platform/tags/list", false, "", "", "", ""},
		{"EmptySegment", "/v2/platform//tags/list", false, "", "", "", ""},
		{"SHA512", "/v2/platform/blobs/sha512:" + strings.Repeat("a", 128), true, "blob", "platform", "", registry.RefUnknown},
		{"SHA512Manifest", "/v2/platform/manifests/sha512:" + strings.Repeat("a", 128), true, "manifest", "platform", "", registry.RefUnknown},
		{"UppercaseHex", "/v2/platform/blobs/" + strings.ToUpper(digest), true, "blob", "platform", "", registry.RefInvalid},
		{"ShortDigest", "/v2/platform/blobs/sha256:abc", true, "blob", "platform", "", registry.RefInvalid},
		{"ShortDigestManifest", "/v2/platform/manifests/sha256:abc", true, "manifest", "platform", "", registry.RefInvalid},
		{"UnknownAlgorithm", "/v2/platform/manifests/md5:abc", true, "manifest", "platform", "", registry.RefInvalid},
		{"BuildMetadataTag", "/v2/platform/manifests/1.2.3+build", false, "", "", "", ""},
		{"BlobByTag", "/v2/platform/blobs/1.2.3", true, "blob", "platform", "", registry.RefInvalid},
		{"Catalog", "/v2/_catalog", false, "", "", "", ""},
		{"Uploads", "/v2/platform/blobs/uploads/", false, "", "", "", ""},
		{"NoName", "/v2/tags/list", false, "", "", "", ""},
		{"NotV2", "/v1/exchange", false, "", "", "", ""},
		{"Backslash", "/v2/platform\\..\\kit/tags/list", false, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := registry.ParsePath(tt.path)
			if ok != tt.ok || r.Kind != tt.kind || r.Name != tt.repo || r.Reference != tt.wantRef || r.Refused != tt.refused {
				t.Errorf("ParsePath(%q) = %+v, %v; want kind %q name %q ref %q refused %q, %v", tt.path, r, ok, tt.kind, tt.repo, tt.wantRef, tt.refused, tt.ok)
			}
		})
	}
}

// FuzzParsePath: whatever the path, a parsed route names a repository of
// clean lower-case components, and a reference that is either a sha256
// digest or a tag without a slash, a plus or a dot segment.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/v2/", "/v2/platform/tags/list", "/v2/platform/manifests/1.2.3", "/v2/platform/blobs/" + digest,
		"/v2/platform/../kit/manifests/1.0.0", "/v2/platform%2fkit/tags/list", "/v2/PLATFORM/manifests/1.2.3+meta"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r, ok := registry.ParsePath(path)
		if !ok {
			return
		}
		for _, seg := range strings.Split(r.Name, "/") {
			if r.Kind != "base" && (seg == "" || seg == "." || seg == ".." || seg != strings.ToLower(seg)) {
				t.Fatalf("%q parsed to name %q", path, r.Name)
			}
		}
		if strings.ContainsAny(r.Name+r.Reference, "%+\\") || strings.Contains(r.Reference, "/") {
			t.Fatalf("%q parsed to %+v", path, r)
		}
		if r.Refused != "" && r.Reference != "" {
			t.Fatalf("%q: refused %q with reference %q", path, r.Refused, r.Reference)
		}
		if (r.Kind == "blob" || r.Kind == "referrers") && r.Refused == "" && !registry.IsDigest(r.Reference) {
			t.Fatalf("%q: blob by non-digest %q", path, r.Reference)
		}
		if strings.Contains(r.Reference, ":") && !registry.IsDigest(r.Reference) {
			t.Fatalf("%q: digest other than sha256 %q", path, r.Reference)
		}
	})
}

func TestFallbackSubject(t *testing.T) {
	hexPart := strings.TrimPrefix(digest, "sha256:")
	tests := []struct {
		tag, want string
		ok        bool
	}{
		{"sha256-" + hexPart, digest, true},
		{"sha256-" + strings.ToUpper(hexPart), "", false},
		{"sha256-" + hexPart + ".sig", "", false},
		{"sha256-abc", "", false},
		{"1.2.3", "", false},
	}
	for _, tt := range tests {
		if got, ok := registry.FallbackSubject(tt.tag); got != tt.want || ok != tt.ok {
			t.Errorf("FallbackSubject(%q) = %q, %v; want %q, %v", tt.tag, got, ok, tt.want, tt.ok)
		}
	}
	if got := registry.FallbackTagOf(digest); got != "sha256-"+hexPart {
		t.Errorf("FallbackTagOf = %q", got)
	}
}
