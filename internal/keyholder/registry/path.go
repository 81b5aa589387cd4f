// Package registry is keyholder's registry front: the read side of the OCI
// Distribution API at /v2/, in front of the upstream registry. It checks
// keyholder's own Basic credential, lets only GET and HEAD through, scopes
// every request to the credential's repository and version range, and
// streams what the upstream answers without buffering blobs.
package registry

import (
	"regexp"
	"strings"
)

// Kinds of /v2 requests the front serves.
const (
	kindBase     = "base"
	kindTags     = "tags"
	kindManifest = "manifest"
	kindBlob     = "blob"
	// kindReferrers is OCI Distribution 1.1's referrers list of a digest.
	kindReferrers = "referrers"
)

// Route is one parsed /v2 path.
type Route struct {
	Kind      string
	Name      string // repository name
	Reference string // tag or digest (manifests), digest (blobs, referrers)
	// Refused, when set, is why the reference names nothing: RefInvalid
	// (not a digest keyholder can read: 400 DIGEST_INVALID) or
	// RefUnknown (a well-formed sha512 digest, which nothing keyholder
	// resolves has: 404). Reference is then empty.
	Refused string
}

// Why a route's reference names nothing.
const (
	RefInvalid = "invalid"
	RefUnknown = "unknown"
)

// sha512Digest is a well-formed digest of the other registered algorithm.
var sha512Digest = regexp.MustCompile(`^sha512:[a-f0-9]{128}$`)

// refusal is why ref, a manifest's (blob false: a tag is fine) or a
// blob's reference, names nothing; "" when it may name something.
func refusal(ref string, blob bool) string {
	switch {
	case sha256Digest.MatchString(ref):
		return ""
	case sha512Digest.MatchString(ref):
		return RefUnknown
	case !blob && !strings.Contains(ref, ":"):
		return ""
	}
	return RefInvalid
}

var (
	// nameComponent is the Distribution spec's path component.
	nameComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	// sha256Digest is the only digest form the front accepts: another
	// algorithm, or upper-case hex, names nothing keyholder resolved.
	sha256Digest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// ParsePath parses the escaped path of a /v2 request. ok is false for
// anything that is not exactly one of the five read routes with a valid
// repository name: dot segments, empty segments, percent-encoding (an
// encoded slash included) and upper-case names never parse.
func ParsePath(escaped string) (Route, bool) {
	rest, ok := strings.CutPrefix(escaped, "/v2/")
	if !ok {
		return Route{}, false
	}
	if rest == "" {
		return Route{Kind: kindBase}, true
	}
	if strings.ContainsAny(rest, "%\\") {
		return Route{}, false
	}
	segs := strings.Split(rest, "/")
	var r Route
	var nameSegs []string
	switch n := len(segs); {
	case n >= 3 && segs[n-2] == "tags" && segs[n-1] == "list":
		r.Kind, nameSegs = kindTags, segs[:n-2]
	case n >= 3 && segs[n-2] == "manifests":
		r.Kind, r.Reference, nameSegs = kindManifest, segs[n-1], segs[:n-2]
		r.Refused = refusal(r.Reference, false)
		if r.Refused == "" && !tagPattern.MatchString(r.Reference) && !sha256Digest.MatchString(r.Reference) {
			return Route{}, false
		}
	case n >= 3 && segs[n-2] == "blobs" && segs[n-1] != "uploads" && segs[n-1] != "":
		r.Kind, r.Reference, nameSegs = kindBlob, segs[n-1], segs[:n-2]
		r.Refused = refusal(r.Reference, true)
	case n >= 3 && segs[n-2] == "referrers" && segs[n-1] != "":
		r.Kind, r.Reference, nameSegs = kindReferrers, segs[n-1], segs[:n-2]
		r.Refused = refusal(r.Reference, true)
	default:
		return Route{}, false
	}
	for _, s := range nameSegs {
		if !nameComponent.MatchString(s) {
			return Route{}, false
		}
	}
	r.Name = strings.Join(nameSegs, "/")
	if len(r.Name) > 255 {
		return Route{}, false
	}
	if r.Refused != "" {
		r.Reference = ""
	}
	return r, true
}

// fallbackTag is the referrers tag schema's tag of a subject: sha256-<hex>.
var fallbackTag = regexp.MustCompile(`^sha256-[a-f0-9]{64}$`)

// FallbackSubject returns the digest whose referrers the tag lists under
// the referrers tag schema (sha256-<hex>); ok is false for any other tag.
func FallbackSubject(tag string) (string, bool) {
	if !fallbackTag.MatchString(tag) {
		return "", false
	}
	return "sha256:" + tag[len("sha256-"):], true
}

// FallbackTagOf is the referrers tag schema's tag of the digest dgst.
func FallbackTagOf(dgst string) string { return strings.Replace(dgst, ":", "-", 1) }

// IsDigest reports whether ref is a sha256 digest (else it is a tag).
func IsDigest(ref string) bool { return sha256Digest.MatchString(ref) }
