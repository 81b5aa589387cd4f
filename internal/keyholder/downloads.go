package keyholder

import (
	"context"
	"strings"
	"unicode"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/products"
	"github.com/platformco/platform/internal/semver"
)

// Downloads in a browser (licensing.md section 4): an OCI artifact whose
// layers carry org.opencontainers.image.title (what `oras push` makes of
// files) is a release's files. A member, or an API key with
// artifacts:fetch, lists and downloads them after box has checked the
// account, the product and the version; each download is a pull.

// FilesArtifactType is the artifact type `platform keyholder publish
// --files` gives a release's files (any artifact whose layers are titled
// is downloadable; this one says what it is).
const FilesArtifactType = "application/vnd.platformco.release.files.v1"

// TitleAnnotation names a layer's file.
const TitleAnnotation = "org.opencontainers.image.title"

// MaxFileName bounds a downloadable file's name.
const MaxFileName = 255

// File is one downloadable file of a release.
type File struct {
	Name      string
	Size      int64
	Digest    string // sha256:<hex>
	MediaType string
}

// SHA256 is the file's SHA-256 in hex.
func (f File) SHA256() string { return strings.TrimPrefix(f.Digest, "sha256:") }

// Release is one version's files, and the digest of the manifest that
// lists them.
type Release struct {
	Repository string
	Version    string
	Digest     string
	Files      []File
}

// File returns the release's file called name.
func (r Release) File(name string) (File, bool) {
	for _, f := range r.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// ErrNoDownload is every download that names nothing: an unknown product,
// a version that is not one, a file name with a path in it, a release or
// a file the registry does not hold.
var ErrNoDownload = errs.New(CodeNotFound, "not found")

// ValidRelease reports whether repository and version can name a release:
// a product, and a version exactly X.Y.Z.
func ValidRelease(repository, version string) bool {
	v, err := semver.ParseVersion(version)
	return products.Valid(repository) && err == nil && v.String() == version
}

// ValidFileName reports whether name can be a downloadable file's: not
// empty, no path (no separator, not . or ..), no control character, at
// most MaxFileName bytes. A layer titled otherwise is not offered.
func ValidFileName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > MaxFileName ||
		strings.ContainsAny(name, `/\`) {
		return false
	}
	return !strings.ContainsFunc(name, unicode.IsControl)
}

// RecordDownload counts the download of f from release by the account box
// checked (grant is box's answer for it): a pull without a credential,
// naming the file.
func (s *Service) RecordDownload(ctx context.Context, grant Redemption, release Release, f File) error {
	return s.store.RecordPull(ctx, Pull{
		AccountID: grant.AccountID, Repository: release.Repository, Tag: release.Version,
		Digest: f.Digest, File: f.Name, PulledAt: s.store.Now(),
	})
}
