package keyholdercmd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/file"
	orasremote "oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/platformco/platform/internal/keyholder"
)

// PushFiles writes the regular files at paths to registryURL as
// repo:version the way `oras push` does: one layer per file, titled with
// the file's base name (org.opencontainers.image.title), in an OCI 1.1
// artifact manifest of type keyholder.FilesArtifactType. Those are the
// files a customer downloads in a browser. It returns the manifest's
// digest. A directory, a name a browser may not save, or two files of one
// name are refused before anything is pushed.
func PushFiles(ctx context.Context, registryURL, user, pass, repo, version string, paths []string) (string, error) {
	u, err := url.Parse(registryURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("KEYHOLDER_REGISTRY_URL: must be an absolute http(s) URL")
	}
	if len(paths) == 0 {
		return "", fmt.Errorf("--files: name at least one file")
	}
	seen := map[string]string{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		name := filepath.Base(p)
		switch {
		case !fi.Mode().IsRegular():
			return "", fmt.Errorf("%s: not a regular file", p)
		case !keyholder.ValidFileName(name):
			return "", fmt.Errorf("%s: %q cannot be a download's name", p, name)
		case seen[name] != "":
			return "", fmt.Errorf("%s and %s: two files named %q", seen[name], p, name)
		}
		seen[name] = p
	}
	store, err := file.New(os.TempDir())
	if err != nil {
		return "", err
	}
	defer store.Close()
	layers := make([]ocispec.Descriptor, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		d, err := store.Add(ctx, filepath.Base(p), "application/octet-stream", abs)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		layers = append(layers, d)
	}
	desc, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, keyholder.FilesArtifactType,
		oras.PackManifestOptions{Layers: layers})
	if err != nil {
		return "", err
	}
	if err := store.Tag(ctx, desc, version); err != nil {
		return "", err
	}
	dst, err := orasremote.NewRepository(u.Host + "/" + repo)
	if err != nil {
		return "", fmt.Errorf("reference: %w", err)
	}
	dst.PlainHTTP = u.Scheme == "http"
	client := &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache()}
	if user != "" {
		client.Credential = auth.StaticCredential(u.Host, auth.Credential{Username: user, Password: pass})
	}
	dst.Client = client
	if _, err := oras.Copy(ctx, store, version, dst, version, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	return desc.Digest.String(), nil
}
