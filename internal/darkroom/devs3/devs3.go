// Package devs3 is `platform dev`'s stand-in for S3 (darkroom.md section
// 1): gofakes3 over a directory, served on loopback. It is refused
// outside development, as billing's test processor is.
package devs3

import (
	"errors"
	"net/http"
	"os"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"
)

// Development is the only DARKROOM_ENV that admits the embedded store.
const Development = "development"

// ErrNotDevelopment refuses the embedded store outside development.
var ErrNotDevelopment = errors.New("DARKROOM_ENV: the embedded S3 server keeps no credentials and is allowed only with DARKROOM_ENV=development")

// New returns an S3 server keeping its buckets under dir, with bucket
// created. env must be Development.
func New(env, dir, bucket string) (http.Handler, error) {
	if env != Development {
		return nil, ErrNotDevelopment
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	backend, err := s3afero.MultiBucket(afero.NewBasePathFs(afero.NewOsFs(), dir))
	if err != nil {
		return nil, err
	}
	if ok, err := backend.BucketExists(bucket); err != nil {
		return nil, err
	} else if !ok {
		if err := backend.CreateBucket(bucket); err != nil {
			return nil, err
		}
	}
	return gofakes3.New(backend, gofakes3.WithIntegrityCheck(true)).Server(), nil
}
