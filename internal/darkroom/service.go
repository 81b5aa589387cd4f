package darkroom

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gen2brain/webp"
	"golang.org/x/sync/singleflight"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// Defaults of darkroom's limits (darkroom.md sections 2 and 3).
const (
	DefaultMaxUploadBytes = 25 << 20
	DefaultMaxDirectBytes = 8 << 20
	DefaultQuotaBytes     = 1 << 30
	DefaultMaxPixels      = 40_000_000
	// UploadTTL is how long a presigned PUT is valid.
	UploadTTL = 15 * time.Minute
	// UploadRetention is how long an upload never completed is kept
	// before Sweep removes its object and row.
	UploadRetention = 24 * time.Hour
)

// Options configure a Service.
type Options struct {
	Store    Store
	Objects  Objects
	Identity Identity
	// Presets are DARKROOM_VARIANTS'; nil takes DefaultVariants.
	Presets        map[string]Preset
	MaxUploadBytes int64
	MaxDirectBytes int64
	QuotaBytes     int64
	MaxPixels      int64
	// URLKey signs media links (DARKROOM_URL_KEY); empty refuses links.
	URLKey []byte
	// Decodes bounds concurrent decodes; GOMAXPROCS when 0.
	Decodes int
	// VariantCacheBytes bounds the stored variants kept in memory
	// (DARKROOM_VARIANT_CACHE_BYTES): DefaultVariantCacheBytes when 0,
	// none when negative.
	VariantCacheBytes int64
	// VariantCacheEntryBytes is the largest variant kept in memory:
	// DefaultVariantCacheEntryBytes when 0.
	VariantCacheEntryBytes int64
	Logger                 *slog.Logger
	Now                    func() time.Time
}

// Service is darkroom's domain.
type Service struct {
	o      Options
	decode chan struct{}
	flight singleflight.Group
	cache  *variantCache
}

// NewService returns the domain with o's zero values at their defaults.
func NewService(o Options) *Service {
	if o.Presets == nil {
		o.Presets, _ = ParsePresets(DefaultVariants)
	}
	if o.MaxUploadBytes <= 0 {
		o.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if o.MaxDirectBytes <= 0 {
		o.MaxDirectBytes = DefaultMaxDirectBytes
	}
	if o.QuotaBytes <= 0 {
		o.QuotaBytes = DefaultQuotaBytes
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.Decodes <= 0 {
		o.Decodes = runtime.GOMAXPROCS(0)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.VariantCacheBytes == 0 {
		o.VariantCacheBytes = DefaultVariantCacheBytes
	}
	if o.VariantCacheEntryBytes <= 0 {
		o.VariantCacheEntryBytes = DefaultVariantCacheEntryBytes
	}
	return &Service{o: o, decode: make(chan struct{}, o.Decodes),
		cache: newVariantCache(o.VariantCacheBytes, o.VariantCacheEntryBytes)}
}

// Principal is a signed-in caller: the token's subject.
type Principal struct{ UserID string }

// Viewer is who reads: a signed-in user (UserID set), a link's holder
// (Link set), or anyone.
type Viewer struct {
	UserID string
	Link   Link
}

func notFound() error { return errs.New(CodeNotFound, MsgNotFound) }

// parseID returns id in the platform's spelling; anything else names no
// media (not_found).
func parseID(id string) (string, error) {
	if v, ok := ids.Parse(id); ok {
		return v, nil
	}
	return "", notFound()
}

func invalid(field, code, message string) error {
	return &errs.Error{Code: CodeValidation, Message: message, Fields: []errs.FieldError{{Field: field, Code: code}}}
}

// unavailable logs a store failure and answers 503.
func (s *Service) unavailable(ctx context.Context, op string, err error) error {
	s.o.Logger.WarnContext(ctx, "object store unavailable", "op", op, "err", err.Error())
	return errs.New(CodeUnavailable, MsgUnavailable)
}

// Authenticate returns the principal a token names. Errors:
// unauthenticated, unavailable.
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	if token == "" {
		return Principal{}, errs.New(CodeUnauthenticated, MsgUnauthenticated)
	}
	id, err := s.o.Identity.User(ctx, token)
	if err != nil {
		return Principal{}, err
	}
	return Principal{UserID: id}, nil
}

// Preset returns the named preset.
func (s *Service) Preset(name string) (Preset, bool) {
	p, ok := s.o.Presets[name]
	return p, ok
}

// checkFilename refuses a name with a path separator or a control
// character, or over 255 bytes; an empty one is allowed.
func checkFilename(name string) error {
	if len(name) > 255 || !utf8.ValidString(name) || strings.ContainsAny(name, `/\`) || name == "." || name == ".." ||
		strings.ContainsFunc(name, unicode.IsControl) {
		return invalid("filename", "invalid", "a filename is at most 255 bytes of UTF-8, with no path separator or control character")
	}
	return nil
}

func checkVisibility(v string) error {
	if v != VisibilityPrivate && v != VisibilityPublic {
		return invalid("visibility", "invalid", "visibility is private or public")
	}
	return nil
}

func checkType(t string) error {
	if !Allowed(t) {
		return errs.New(CodeUnsupportedType, "darkroom keeps image/jpeg, image/png, image/webp, image/gif and application/pdf")
	}
	return nil
}

// UploadInput is a presigned upload as declared.
type UploadInput struct {
	Filename    string
	ContentType string
	Size        int64
	SHA256      string
	Visibility  string
}

// CreateUpload validates in and returns the upload with its presigned PUT,
// valid until the returned time. Errors: validation_failed,
// unsupported_type, too_large, quota_exceeded, unavailable.
func (s *Service) CreateUpload(ctx context.Context, p Principal, in UploadInput) (Upload, PresignedPut, time.Time, error) {
	sum, err := hex.DecodeString(in.SHA256)
	switch {
	case err != nil || len(sum) != sha256.Size:
		return Upload{}, PresignedPut{}, time.Time{}, invalid("sha256", "invalid", "sha256 is the file's SHA-256 in 64 hex digits")
	case in.Size < 1:
		return Upload{}, PresignedPut{}, time.Time{}, invalid("size", "invalid", "size is the file's length in bytes, at least 1")
	}
	if err := checkFilename(in.Filename); err != nil {
		return Upload{}, PresignedPut{}, time.Time{}, err
	}
	if err := checkVisibility(in.Visibility); err != nil {
		return Upload{}, PresignedPut{}, time.Time{}, err
	}
	if err := checkType(in.ContentType); err != nil {
		return Upload{}, PresignedPut{}, time.Time{}, err
	}
	if in.Size > s.o.MaxUploadBytes {
		return Upload{}, PresignedPut{}, time.Time{}, errs.New(CodeTooLarge, fmt.Sprintf("an upload is at most %d bytes", s.o.MaxUploadBytes))
	}
	if err := s.checkQuota(ctx, p.UserID, in.Size); err != nil {
		return Upload{}, PresignedPut{}, time.Time{}, err
	}
	u := Upload{ID: ids.New(), OwnerID: p.UserID, Filename: in.Filename, ContentType: in.ContentType, Size: in.Size,
		SHA256: strings.ToLower(in.SHA256), Visibility: in.Visibility}
	put, err := s.o.Objects.PresignPut(ctx, OriginalKey(u.ID), u.ContentType, sum, UploadTTL)
	if err != nil {
		return Upload{}, PresignedPut{}, time.Time{}, s.unavailable(ctx, "presign", err)
	}
	if err := s.o.Store.CreateUpload(ctx, u); err != nil {
		return Upload{}, PresignedPut{}, time.Time{}, err
	}
	return u, put, s.o.Now().Add(UploadTTL), nil
}

func (s *Service) quotaExceeded() error {
	return errs.New(CodeQuotaExceeded, fmt.Sprintf("your media would pass your quota of %d bytes; delete some first", s.o.QuotaBytes))
}

// checkQuota refuses early what would pass the quota; the database
// enforces it again when the media is recorded.
func (s *Service) checkQuota(ctx context.Context, owner string, size int64) error {
	used, err := s.o.Store.Usage(ctx, owner)
	if err != nil {
		return err
	}
	if used+size > s.o.QuotaBytes {
		return s.quotaExceeded()
	}
	return nil
}

// Complete checks the object a presigned upload PUT and records the
// media; completing twice answers the same media. Errors: not_found,
// object_absent, checksum_mismatch, content_type_mismatch, invalid_image,
// quota_exceeded (each 422 deletes the object), unavailable.
func (s *Service) Complete(ctx context.Context, p Principal, id string) (Media, error) {
	id, err := parseID(id)
	if err != nil {
		return Media{}, err
	}
	u, err := s.o.Store.Upload(ctx, id)
	if errs.Code(err) == CodeNotFound {
		// Completed before (the upload row is gone), or never created.
		m, err := s.o.Store.Media(ctx, id)
		if err != nil && errs.Code(err) != CodeNotFound {
			return Media{}, err
		}
		if err != nil || m.OwnerID != p.UserID {
			return Media{}, notFound()
		}
		return m, nil
	}
	if err != nil {
		return Media{}, err
	}
	if u.OwnerID != p.UserID {
		return Media{}, notFound()
	}
	key := OriginalKey(id)
	obj, info, err := s.o.Objects.Open(ctx, key)
	if errors.Is(err, ErrObjectAbsent) {
		return Media{}, errs.New(CodeObjectAbsent, "nothing was uploaded to this upload's URL yet; PUT the file, then complete")
	}
	if err != nil {
		return Media{}, s.unavailable(ctx, "open", err)
	}
	refuse := func(e error) (Media, error) {
		if err := s.o.Objects.Delete(ctx, key); err != nil {
			s.o.Logger.WarnContext(ctx, "a refused upload's object was not deleted", "upload_id", id, "err", err.Error())
		}
		return Media{}, e
	}
	if info.Size != u.Size {
		obj.Close()
		return refuse(errs.New(CodeChecksumMismatch, fmt.Sprintf("the object has %d bytes, %d were declared; it was deleted", info.Size, u.Size)))
	}
	h := sha256.New()
	data, err := io.ReadAll(io.TeeReader(io.LimitReader(obj, u.Size+1), h))
	obj.Close()
	if err != nil {
		return Media{}, s.unavailable(ctx, "read", err)
	}
	if int64(len(data)) != u.Size || hex.EncodeToString(h.Sum(nil)) != u.SHA256 {
		return refuse(errs.New(CodeChecksumMismatch, "the object's SHA-256 or size differs from the declared; it was deleted"))
	}
	in, err := s.inspect(ctx, data, u.ContentType)
	if err != nil {
		return refuse(err)
	}
	m := Media{ID: id, OwnerID: p.UserID, Filename: u.Filename, ContentType: in.ContentType, Size: u.Size, SHA256: u.SHA256,
		Width: in.Width, Height: in.Height, Visibility: u.Visibility}
	m, err = s.o.Store.CompleteUpload(ctx, m, s.o.QuotaBytes)
	if errs.Code(err) == CodeQuotaExceeded {
		return refuse(err)
	}
	return m, err
}

// inspect checks data is the declared type and a whole image within the
// pixel limit, under the decode bound. Errors: content_type_mismatch,
// invalid_image, validation_failed (empty).
func (s *Service) inspect(ctx context.Context, data []byte, declared string) (Inspected, error) {
	if len(data) == 0 {
		return Inspected{}, invalid("file", "empty", "the file is empty")
	}
	t := Sniff(data)
	if t != declared {
		return Inspected{}, errs.New(CodeContentTypeMismatch,
			fmt.Sprintf("the file was declared %s but reads as %s; it was not kept", declared, or(t, "another type ("+sniffHTTP(data)+")")))
	}
	if !IsImage(t) {
		return Inspected{ContentType: t}, nil
	}
	cfg, err := header(t, data, s.o.MaxPixels)
	if errors.Is(err, errPixels) {
		return Inspected{}, errs.New(CodeInvalidImage, fmt.Sprintf("the image declares %dx%d pixels, over the limit of %d", cfg.Width, cfg.Height, s.o.MaxPixels))
	}
	if err != nil {
		return Inspected{}, errs.New(CodeInvalidImage, "the image's header cannot be read")
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return Inspected{}, err
	}
	_, err = decode(t, bytes.NewReader(data))
	release()
	if err != nil {
		return Inspected{}, errs.New(CodeInvalidImage, "the image cannot be decoded (truncated or corrupt)")
	}
	w, h := cfg.Width, cfg.Height
	if swapsAxes(orientation(data)) {
		w, h = h, w
	}
	return Inspected{ContentType: t, Width: w, Height: h}, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// acquire takes one of the decode slots, or gives up with ctx.
func (s *Service) acquire(ctx context.Context) (func(), error) {
	select {
	case s.decode <- struct{}{}:
		return func() { <-s.decode }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// DirectInput is a direct upload: the body and its declared type.
type DirectInput struct {
	ContentType string
	Filename    string
	Visibility  string
	Body        io.Reader
}

// Direct streams in.Body to the store while hashing it, then checks and
// records it. Errors: validation_failed, unsupported_type, too_large,
// quota_exceeded, content_type_mismatch, invalid_image, unavailable.
func (s *Service) Direct(ctx context.Context, p Principal, in DirectInput) (Media, error) {
	if err := checkType(in.ContentType); err != nil {
		return Media{}, err
	}
	if err := checkFilename(in.Filename); err != nil {
		return Media{}, err
	}
	if err := checkVisibility(in.Visibility); err != nil {
		return Media{}, err
	}
	if err := s.checkQuota(ctx, p.UserID, 1); err != nil {
		return Media{}, err
	}
	br := bufio.NewReader(in.Body)
	if _, err := br.Peek(1); err == io.EOF {
		return Media{}, invalid("file", "empty", "the file is empty")
	}
	id := ids.New()
	key := OriginalKey(id)
	h := sha256.New()
	var kept bytes.Buffer
	body := &limited{r: io.TeeReader(br, io.MultiWriter(h, &kept)), n: s.o.MaxDirectBytes}
	if err := s.o.Objects.Put(ctx, key, body, -1, in.ContentType); err != nil {
		if body.over {
			_ = s.o.Objects.Delete(ctx, key)
			return Media{}, errs.New(CodeTooLarge, fmt.Sprintf("a direct upload is at most %d bytes; use a presigned upload", s.o.MaxDirectBytes))
		}
		if body.err != nil {
			return Media{}, body.err // the client's body failed
		}
		return Media{}, s.unavailable(ctx, "put", err)
	}
	refuse := func(e error) (Media, error) {
		if err := s.o.Objects.Delete(ctx, key); err != nil {
			s.o.Logger.WarnContext(ctx, "a refused upload's object was not deleted", "media_id", id, "err", err.Error())
		}
		return Media{}, e
	}
	data := kept.Bytes()
	in2, err := s.inspect(ctx, data, in.ContentType)
	if err != nil {
		return refuse(err)
	}
	if err := s.checkQuota(ctx, p.UserID, int64(len(data))); err != nil {
		return refuse(err)
	}
	m := Media{ID: id, OwnerID: p.UserID, Filename: in.Filename, ContentType: in2.ContentType, Size: int64(len(data)),
		SHA256: hex.EncodeToString(h.Sum(nil)), Width: in2.Width, Height: in2.Height, Visibility: in.Visibility}
	if err := s.o.Store.CreateMedia(ctx, m, s.o.QuotaBytes); err != nil {
		return refuse(err)
	}
	return s.o.Store.Media(ctx, id)
}

// errTooLarge is limited's error past its bound.
var errTooLarge = errors.New("darkroom: body over the limit")

// limited reads at most n bytes of r and fails past them.
type limited struct {
	r    io.Reader
	n    int64
	over bool
	err  error
}

func (l *limited) Read(p []byte) (int, error) {
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	if l.n < 0 {
		l.over = true
		return k, errTooLarge
	}
	if err != nil && err != io.EOF {
		l.err = err
	}
	return k, err
}

// Media returns media id if v may see it. Errors: not_found.
func (s *Service) Media(ctx context.Context, v Viewer, id string) (Media, error) {
	id, err := parseID(id)
	if err != nil {
		return Media{}, err
	}
	m, err := s.o.Store.Media(ctx, id)
	if err != nil {
		return Media{}, err
	}
	if m.Visibility == VisibilityPublic || (v.UserID != "" && v.UserID == m.OwnerID) ||
		(v.Link.Sig != "" && validLink(s.o.URLKey, m.ID, v.Link, s.o.Now())) {
		return m, nil
	}
	return Media{}, notFound()
}

// Open returns media id and its original opened for reading. Errors:
// not_found, unavailable.
func (s *Service) Open(ctx context.Context, v Viewer, id string) (Media, Object, error) {
	m, err := s.Media(ctx, v, id)
	if err != nil {
		return Media{}, nil, err
	}
	obj, _, err := s.o.Objects.Open(ctx, OriginalKey(m.ID))
	if errors.Is(err, ErrObjectAbsent) {
		return Media{}, nil, notFound()
	}
	if err != nil {
		return Media{}, nil, s.unavailable(ctx, "open", err)
	}
	return m, obj, nil
}

// OpenVariant returns media id's variant at preset, in WebP when
// acceptsWebP, made and stored on the first request (once, however many
// ask at once). The media and the variant's row are read on every call;
// the bytes of a small variant come from memory when the row's SHA-256
// was kept (decision 0030). Errors: not_found (also an unknown preset),
// unsupported_type (a PDF), invalid_image, unavailable.
func (s *Service) OpenVariant(ctx context.Context, v Viewer, id, preset string, acceptsWebP bool) (Media, Variant, Object, error) {
	p, ok := s.o.Presets[preset]
	if !ok {
		return Media{}, Variant{}, nil, errs.New(CodeNotFound, "no such preset")
	}
	m, err := s.Media(ctx, v, id)
	if err != nil {
		return Media{}, Variant{}, nil, err
	}
	if !IsImage(m.ContentType) {
		return Media{}, Variant{}, nil, errs.New(CodeUnsupportedType, "a "+m.ContentType+" has no variants")
	}
	format := Format(m.ContentType, acceptsWebP)
	vr, err := s.o.Store.Variant(ctx, m.ID, p.Name, format)
	if errs.Code(err) == CodeNotFound {
		var res any
		res, err, _ = s.flight.Do(m.ID+"/"+p.Name+"/"+format, func() (any, error) {
			return s.makeVariant(context.WithoutCancel(ctx), m, p, format)
		})
		if err == nil {
			vr = res.(Variant)
		}
	}
	if err != nil {
		return Media{}, Variant{}, nil, err
	}
	key := cacheKey{media: m.ID, preset: vr.Preset, format: vr.Format, sha: vr.SHA256}
	if data, ok := s.cache.get(key); ok {
		return m, vr, memObject{bytes.NewReader(data)}, nil
	}
	obj, _, err := s.o.Objects.Open(ctx, VariantKey(m.ID, vr.Preset, vr.Format))
	if err != nil {
		return Media{}, Variant{}, nil, s.unavailable(ctx, "open", err)
	}
	if s.cache == nil || vr.Size > s.o.VariantCacheEntryBytes {
		return m, vr, obj, nil
	}
	data, err := io.ReadAll(io.LimitReader(obj, vr.Size+1))
	obj.Close()
	if err != nil {
		return Media{}, Variant{}, nil, s.unavailable(ctx, "read", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) == vr.SHA256 {
		s.cache.put(key, data)
	} else {
		s.o.Logger.WarnContext(ctx, "a stored variant differs from its row", "media_id", m.ID, "preset", vr.Preset, "format", vr.Format)
	}
	return m, vr, memObject{bytes.NewReader(data)}, nil
}

// makeVariant renders, stores and records one variant: a replica that
// lost the race writes the same bytes to the same key and takes the row
// the winner recorded. The decode slot is taken before the original is
// read, so requests waiting for one hold no original (decision 0030).
func (s *Service) makeVariant(ctx context.Context, m Media, p Preset, format string) (Variant, error) {
	if vr, err := s.o.Store.Variant(ctx, m.ID, p.Name, format); err == nil {
		return vr, nil
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return Variant{}, err
	}
	out, w, h, err := s.renderOriginal(ctx, m, p, format)
	release()
	if err != nil {
		return Variant{}, err
	}
	sum := sha256.Sum256(out)
	vr := Variant{MediaID: m.ID, Preset: p.Name, Format: format, ContentType: FormatType(format), Size: int64(len(out)),
		SHA256: hex.EncodeToString(sum[:]), Width: w, Height: h}
	if err := s.o.Objects.Put(ctx, VariantKey(m.ID, p.Name, format), bytes.NewReader(out), int64(len(out)), vr.ContentType); err != nil {
		return Variant{}, s.unavailable(ctx, "put", err)
	}
	got, err := s.o.Store.AddVariant(ctx, vr)
	if err == nil && got.SHA256 == vr.SHA256 {
		s.cache.put(cacheKey{media: m.ID, preset: p.Name, format: format, sha: vr.SHA256}, out)
	}
	return got, err
}

// renderOriginal reads m's original whole and renders it; the caller
// holds a decode slot.
func (s *Service) renderOriginal(ctx context.Context, m Media, p Preset, format string) ([]byte, int, int, error) {
	obj, _, err := s.o.Objects.Open(ctx, OriginalKey(m.ID))
	if errors.Is(err, ErrObjectAbsent) {
		return nil, 0, 0, notFound()
	}
	if err != nil {
		return nil, 0, 0, s.unavailable(ctx, "open", err)
	}
	data, err := io.ReadAll(io.LimitReader(obj, m.Size+1))
	obj.Close()
	if err != nil {
		return nil, 0, 0, s.unavailable(ctx, "read", err)
	}
	return s.render(data, m.ContentType, p, format)
}

// render decodes data (header first, under the pixel limit), applies its
// EXIF orientation, scales it to p and encodes it as format; the caller
// holds a decode slot. Nothing of the original's metadata is carried
// over.
func (s *Service) render(data []byte, t string, p Preset, format string) ([]byte, int, int, error) {
	if _, err := header(t, data, s.o.MaxPixels); err != nil {
		return nil, 0, 0, errs.New(CodeInvalidImage, "the original cannot be rendered")
	}
	img, err := decode(t, bytes.NewReader(data))
	if err != nil {
		return nil, 0, 0, errs.New(CodeInvalidImage, "the original cannot be decoded")
	}
	img = orient(img, orientation(data))
	scaled := Scale(img, p)
	var buf bytes.Buffer
	switch format {
	case "webp":
		err = webp.Encode(&buf, scaled, webp.Options{Quality: 80, Method: 4})
	case "png":
		err = png.Encode(&buf, scaled)
	default:
		err = jpeg.Encode(&buf, flatten(scaled), &jpeg.Options{Quality: 85})
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("darkroom: encode %s: %w", format, err)
	}
	b := scaled.Bounds()
	return buf.Bytes(), b.Dx(), b.Dy(), nil
}

// CreateLink signs a link to media id for ttl. Errors: not_found,
// validation_failed, unavailable (no URL key).
func (s *Service) CreateLink(ctx context.Context, p Principal, id string, ttl time.Duration) (Link, time.Time, error) {
	id, err := parseID(id)
	if err != nil {
		return Link{}, time.Time{}, err
	}
	if ttl < time.Second || ttl > MaxLinkTTL {
		return Link{}, time.Time{}, invalid("ttl", "out_of_range", "ttl is 1 to 604800 seconds (7 days)")
	}
	m, err := s.o.Store.Media(ctx, id)
	if err != nil {
		return Link{}, time.Time{}, err
	}
	if m.OwnerID != p.UserID {
		return Link{}, time.Time{}, notFound()
	}
	if len(s.o.URLKey) == 0 {
		return Link{}, time.Time{}, errs.New(CodeUnavailable, "DARKROOM_URL_KEY is not set: links cannot be signed")
	}
	exp := s.o.Now().Add(ttl).Truncate(time.Second)
	return Link{Exp: exp.Unix(), Sig: linkSig(s.o.URLKey, m.ID, exp.Unix())}, exp, nil
}

// Delete removes media id (the owner's), its original and every variant.
// The objects go first, so a store outage leaves the media whole (503)
// and a retry finishes. Errors: not_found, unavailable.
func (s *Service) Delete(ctx context.Context, p Principal, id string) error {
	id, err := parseID(id)
	if err != nil {
		return err
	}
	m, err := s.o.Store.Media(ctx, id)
	if err != nil {
		return err
	}
	if m.OwnerID != p.UserID {
		return notFound()
	}
	vs, err := s.o.Store.Variants(ctx, m.ID)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if err := s.o.Objects.Delete(ctx, VariantKey(m.ID, v.Preset, v.Format)); err != nil {
			return s.unavailable(ctx, "delete", err)
		}
	}
	if err := s.o.Objects.Delete(ctx, OriginalKey(m.ID)); err != nil {
		return s.unavailable(ctx, "delete", err)
	}
	return s.o.Store.DeleteMedia(ctx, m.ID, p.UserID)
}

// Sweep removes uploads never completed within UploadRetention, object
// and row, and returns how many went.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	var n int64
	for {
		us, err := s.o.Store.StaleUploads(ctx, s.o.Now().Add(-UploadRetention), 100)
		if err != nil || len(us) == 0 {
			return n, err
		}
		for _, u := range us {
			if err := s.o.Objects.Delete(ctx, OriginalKey(u.ID)); err != nil {
				return n, fmt.Errorf("darkroom: sweep %s: %w", u.ID, err)
			}
			if err := s.o.Store.DeleteUpload(ctx, u.ID); err != nil {
				return n, err
			}
			n++
		}
	}
}
