// Package darkroom is the platform's media (darkroom.md): uploads,
// presigned or direct, checked on completion; originals and the variants
// of named presets, kept in an S3-compatible object store; reads by
// visibility, signed links, and deletion. It knows no SQL and no HTTP:
// the Store is sqlstore's, the Objects are s3store's, Identity verifies
// tokens against identity's key set.
package darkroom

import (
	"context"
	"errors"
	"io"
	"time"
)

// The error codes darkroom answers with; httpapi maps each to one status.
const (
	CodeUnauthenticated     = "unauthenticated"       // 401
	CodeNotFound            = "not_found"             // 404: missing, or not the caller's to see
	CodeObjectAbsent        = "object_absent"         // 409: the upload was never PUT
	CodeTooLarge            = "too_large"             // 413: over the size limit
	CodeQuotaExceeded       = "quota_exceeded"        // 413: over the user's quota
	CodeUnsupportedType     = "unsupported_type"      // 415: a type darkroom keeps no variants of, or refuses
	CodeValidation          = "validation_failed"     // 422: field errors
	CodeChecksumMismatch    = "checksum_mismatch"     // 422: size or SHA-256 differ from the declared
	CodeContentTypeMismatch = "content_type_mismatch" // 422: the bytes are not the declared type
	CodeInvalidImage        = "invalid_image"         // 422: truncated, or over the pixel limit
	CodeUnavailable         = "unavailable"           // 503
)

// Messages for codes several places answer with.
const (
	MsgUnauthenticated = "a valid identity access token is required"
	MsgNotFound        = "no such media"
	MsgUnavailable     = "the media store or database is unavailable; try again shortly"
)

// Visibility of media.
const (
	VisibilityPrivate = "private"
	VisibilityPublic  = "public"
)

// The content types darkroom keeps (darkroom.md section 2).
const (
	TypeJPEG = "image/jpeg"
	TypePNG  = "image/png"
	TypeWebP = "image/webp"
	TypeGIF  = "image/gif"
	TypePDF  = "application/pdf"
)

// Allowed reports whether darkroom keeps contentType.
func Allowed(contentType string) bool {
	switch contentType {
	case TypeJPEG, TypePNG, TypeWebP, TypeGIF, TypePDF:
		return true
	}
	return false
}

// Media is one kept original. SHA256 is hex; Width and Height are the
// image's as shown (after its EXIF orientation), 0 for a PDF.
type Media struct {
	ID          string
	OwnerID     string
	Filename    string
	ContentType string
	Size        int64
	SHA256      string
	Width       int
	Height      int
	Visibility  string
	CreatedAt   time.Time
}

// Upload is a presigned upload not yet completed; its ID becomes the
// media's.
type Upload struct {
	ID          string
	OwnerID     string
	Filename    string
	ContentType string
	Size        int64
	SHA256      string
	Visibility  string
	CreatedAt   time.Time
}

// Variant is one stored rendition of media at a preset, in a format.
type Variant struct {
	MediaID     string
	Preset      string
	Format      string // webp, jpeg or png
	ContentType string
	Size        int64
	SHA256      string
	Width       int
	Height      int
	CreatedAt   time.Time
}

// Store is darkroom's persistence (sqlstore implements it on both
// engines).
type Store interface {
	// CreateUpload records u.
	CreateUpload(ctx context.Context, u Upload) error
	// Upload returns the pending upload id. Errors: not_found.
	Upload(ctx context.Context, id string) (Upload, error)
	// CompleteUpload records m (whose ID is the upload's) and removes the
	// upload, adding m.Size to the owner's usage provided it stays within
	// quota; when the media already exists it is returned unchanged.
	// Errors: not_found (no such upload nor media), quota_exceeded.
	CompleteUpload(ctx context.Context, m Media, quota int64) (Media, error)
	// CreateMedia records m (a direct upload) within quota. Errors:
	// quota_exceeded.
	CreateMedia(ctx context.Context, m Media, quota int64) error
	// Media returns media id. Errors: not_found.
	Media(ctx context.Context, id string) (Media, error)
	// Usage returns the bytes ownerID keeps plus those of their pending
	// uploads.
	Usage(ctx context.Context, ownerID string) (int64, error)
	// Variant returns the stored variant. Errors: not_found.
	Variant(ctx context.Context, mediaID, preset, format string) (Variant, error)
	// AddVariant records v once: when the row exists (another request or
	// replica made it first) the existing row is returned. Errors:
	// not_found (the media is gone).
	AddVariant(ctx context.Context, v Variant) (Variant, error)
	// DeleteMedia removes media id owned by ownerID, its variants' rows,
	// and its bytes from the owner's usage. Errors: not_found.
	DeleteMedia(ctx context.Context, id, ownerID string) error
	// Variants lists media id's variants.
	Variants(ctx context.Context, mediaID string) ([]Variant, error)
	// DeleteUpload removes the pending upload id, if any.
	DeleteUpload(ctx context.Context, id string) error
	// StaleUploads returns at most limit uploads created before before.
	StaleUploads(ctx context.Context, before time.Time, limit int) ([]Upload, error)
}

// ErrObjectAbsent is an Objects answer for a key with no object.
var ErrObjectAbsent = errors.New("darkroom: no such object")

// ObjectInfo is what the store says of an object.
type ObjectInfo struct {
	Size        int64
	ContentType string
}

// Object is an object opened for reading: seeking is ranged reads.
type Object interface {
	io.ReadSeekCloser
}

// PresignedPut is a presigned PUT: the URL, and the headers the client
// must send with it (they are signed).
type PresignedPut struct {
	URL     string
	Headers map[string]string
}

// Objects is the object store (s3store implements it over minio-go). Any
// error but ErrObjectAbsent is the store being unavailable.
type Objects interface {
	// PresignPut signs a PUT of key valid for ttl that requires
	// contentType and the SHA-256 sum.
	PresignPut(ctx context.Context, key, contentType string, sha256 []byte, ttl time.Duration) (PresignedPut, error)
	// Put writes key from r (size -1 when unknown).
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Stat describes key. Errors: ErrObjectAbsent.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Open opens key for reading. Errors: ErrObjectAbsent.
	Open(ctx context.Context, key string) (Object, ObjectInfo, error)
	// Delete removes key; an absent key is not an error.
	Delete(ctx context.Context, key string) error
	// Ready reports whether the bucket answers (HeadBucket).
	Ready(ctx context.Context) error
}

// Identity verifies a signed-in user's token locally against identity's
// key set.
type Identity interface {
	// User returns the token's subject. Errors: unauthenticated,
	// unavailable.
	User(ctx context.Context, token string) (string, error)
}

// OriginalKey is the object key of media id's original.
func OriginalKey(id string) string { return "originals/" + id }

// VariantKey is the object key of a variant.
func VariantKey(mediaID, preset, format string) string {
	return "variants/" + mediaID + "/" + preset + "." + format
}
