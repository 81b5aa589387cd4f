// Package s3store is darkroom's object store over any S3-compatible
// server, through minio-go (darkroom.md section 1): AWS S3 by region, or a
// custom endpoint (region auto); presigned PUTs that require the declared
// type and SHA-256; HEAD, ranged GETs through a seekable object, deletes.
package s3store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/platformco/platform/internal/darkroom"
)

// RegionAuto is the region of a custom endpoint.
const RegionAuto = "auto"

// partSize is the part of a streamed PUT of unknown length (S3's least).
const partSize = 5 << 20

// Options configure a Store.
type Options struct {
	// Endpoint is a custom S3-compatible endpoint (http:// or https://);
	// empty is AWS S3 in Region.
	Endpoint        string
	Region          string
	Bucket          string
	AccessKeyID     string
	SecretAccessKey string
	// Transport, when set, carries every request (tests).
	Transport http.RoundTripper
}

// Store implements darkroom.Objects.
type Store struct {
	c      *minio.Client
	bucket string
}

var _ darkroom.Objects = (*Store)(nil)

// New returns a store of o.Bucket. It does not dial.
func New(o Options) (*Store, error) {
	host, secure := "s3.amazonaws.com", true
	lookup := minio.BucketLookupAuto
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("the endpoint is an http or https URL with no path, got %q", o.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https"
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(o.AccessKeyID, o.SecretAccessKey, ""),
		Secure:       secure,
		Region:       o.Region,
		BucketLookup: lookup,
		Transport:    o.Transport,
	})
	if err != nil {
		return nil, err
	}
	return &Store{c: c, bucket: o.Bucket}, nil
}

// absent maps S3's "no such key" to darkroom.ErrObjectAbsent.
func absent(err error) error {
	if err == nil {
		return nil
	}
	r := minio.ToErrorResponse(err)
	if r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound && r.Code != minio.NoSuchBucket {
		return darkroom.ErrObjectAbsent
	}
	return err
}

// PresignPut implements darkroom.Objects: Content-Type and
// x-amz-checksum-sha256 are signed, so the store refuses a PUT without
// them and a body whose SHA-256 differs.
func (s *Store) PresignPut(ctx context.Context, key, contentType string, sum []byte, ttl time.Duration) (darkroom.PresignedPut, error) {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("X-Amz-Checksum-Sha256", base64.StdEncoding.EncodeToString(sum))
	u, err := s.c.PresignHeader(ctx, http.MethodPut, s.bucket, key, ttl, nil, h)
	if err != nil {
		return darkroom.PresignedPut{}, err
	}
	return darkroom.PresignedPut{URL: u.String(), Headers: map[string]string{
		"Content-Type": contentType, "x-amz-checksum-sha256": h.Get("X-Amz-Checksum-Sha256")}}, nil
}

// Put implements darkroom.Objects; a body of unknown length is sent in
// 5 MiB parts.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	// The payload goes unsigned (its parts carry their checksums): the
	// streaming signature's aws-chunked body is not every server's.
	opts := minio.PutObjectOptions{ContentType: contentType, DisableContentSha256: true}
	if size < 0 {
		opts.PartSize = partSize
	}
	_, err := s.c.PutObject(ctx, s.bucket, key, r, size, opts)
	return err
}

// Stat implements darkroom.Objects (HEAD).
func (s *Store) Stat(ctx context.Context, key string) (darkroom.ObjectInfo, error) {
	info, err := s.c.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return darkroom.ObjectInfo{}, absent(err)
	}
	return darkroom.ObjectInfo{Size: info.Size, ContentType: info.ContentType}, nil
}

// Open implements darkroom.Objects: the object's reads after a Seek are
// ranged GETs.
func (s *Store) Open(ctx context.Context, key string) (darkroom.Object, darkroom.ObjectInfo, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, darkroom.ObjectInfo{}, absent(err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, darkroom.ObjectInfo{}, absent(err)
	}
	return obj, darkroom.ObjectInfo{Size: info.Size, ContentType: info.ContentType}, nil
}

// Delete implements darkroom.Objects.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
}

// Ready implements darkroom.Objects (HeadBucket).
func (s *Store) Ready(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the bucket does not exist")
	}
	return nil
}

// CreateBucket makes the bucket unless it exists (development and tests).
func (s *Store) CreateBucket(ctx context.Context) error {
	if ok, err := s.c.BucketExists(ctx, s.bucket); err == nil && ok {
		return nil
	}
	return s.c.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{})
}
