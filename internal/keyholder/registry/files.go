package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/keyholder"
)

// errFilesUnavailable answers a registry that cannot say what a release
// holds: a dependency failing closed.
var errFilesUnavailable = errs.New(keyholder.CodeUnavailable, "registry unavailable")

// Release reads the files of repo's version tag: the layers of its
// manifest titled with keyholder.TitleAnnotation by a name a browser may
// save. An image's layers carry no title, and an index has none, so their
// release lists no file. Errors: keyholder.ErrNoDownload (no such tag),
// CodeUnavailable.
func (u *Upstream) Release(ctx context.Context, repo, version string) (keyholder.Release, error) {
	body, _, dgst, err := u.Manifest(ctx, repo, version)
	if errors.Is(err, errNotFound) {
		return keyholder.Release{}, keyholder.ErrNoDownload
	}
	if err != nil {
		return keyholder.Release{}, fmt.Errorf("%w: %v", errFilesUnavailable, err)
	}
	var m struct {
		Layers []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Size        int64             `json:"size"`
			Annotations map[string]string `json:"annotations"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return keyholder.Release{}, fmt.Errorf("%w: manifest of %s:%s: %v", errFilesUnavailable, repo, version, err)
	}
	rel := keyholder.Release{Repository: repo, Version: version, Digest: dgst, Files: []keyholder.File{}}
	for _, l := range m.Layers {
		name := l.Annotations[keyholder.TitleAnnotation]
		if !keyholder.ValidFileName(name) || !IsDigest(l.Digest) || l.Size < 0 {
			continue
		}
		if _, dup := rel.File(name); dup {
			continue
		}
		rel.Files = append(rel.Files, keyholder.File{Name: name, Size: l.Size, Digest: l.Digest, MediaType: l.MediaType})
	}
	return rel, nil
}

// OpenBlob asks the upstream for repo's blob dgst with method (GET or
// HEAD) and, when set, the client's Range. The response is returned for
// 200, 206 and 416 (its caller closes the body). Errors:
// keyholder.ErrNoDownload (404), CodeUnavailable.
func (u *Upstream) OpenBlob(ctx context.Context, method, repo, dgst, rangeHeader string) (*http.Response, error) {
	header := http.Header{}
	if rangeHeader != "" {
		header.Set("Range", rangeHeader)
	}
	resp, err := u.do(ctx, method, "/v2/"+repo+"/blobs/"+dgst, header)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errFilesUnavailable, redact(err))
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, keyholder.ErrNoDownload
	}
	return nil, fmt.Errorf("%w: blob: status %d", errFilesUnavailable, resp.StatusCode)
}
