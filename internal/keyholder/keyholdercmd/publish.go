package keyholdercmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/products"
	"github.com/platformco/platform/internal/semver"
)

// runPublish is `platform keyholder publish`: push the unit upstream with
// the registry's own credentials, tagged with the version, then publish the
// release at box. The push comes first, so a published release never names
// bytes that are not there; re-running after a failure is safe (a release
// box already has is reported, not an error).
func runPublish(ctx context.Context, args []string, env cli.Env) error {
	flags := cli.FlagSet("keyholder publish", env.Stderr)
	repo := flags.String("repository", "", "the product: kit, platform, identity or courier")
	version := flags.String("version", "", "the release version, X.Y.Z")
	notes := flags.String("notes", "", "release notes for box (optional)")
	files := flags.Bool("files", false, "push the arguments as a release's downloadable files (an ORAS artifact)")
	if err := cli.Parse(flags, args); err != nil {
		return err
	}
	if *files && flags.NArg() == 0 {
		return cli.Usagef("keyholder publish: --files wants at least one FILE (`platform keyholder help` shows the usage)")
	}
	if !*files && flags.NArg() != 1 {
		return cli.Usagef("keyholder publish: want exactly one DIR_OR_TARBALL (`platform keyholder help` shows the usage)")
	}
	if !products.Valid(*repo) {
		return cli.Usagef("keyholder publish: --repository must be one of %s", strings.Join(products.All(), ", "))
	}
	if v, err := semver.ParseVersion(*version); err != nil || v.String() != *version {
		return cli.Usagef("keyholder publish: --version must be X.Y.Z, got %q", *version)
	}
	var cfg struct {
		RegistryURL      string `env:"KEYHOLDER_REGISTRY_URL, default=http://127.0.0.1:8086" rule:"url"`
		RegistryUsername string `env:"KEYHOLDER_REGISTRY_USERNAME"`
		RegistryPassword string `env:"KEYHOLDER_REGISTRY_PASSWORD"`
		BoxURL           string `env:"BOX_URL, default=http://localhost:8082" rule:"url"`
		// Token is a staff session or, in a release pipeline, a staff key
		// with scope releases:publish (POST /v1/operator/api_keys), so the
		// pipeline holds no person's session: box publishes the release on
		// its authority.
		Token string `env:"PLATFORM_TOKEN, required"`
	}
	err := config.Load(ctx, env.Getenv, &cfg)
	if err != nil {
		return err
	}
	registryURL, boxURL, token := strings.TrimRight(cfg.RegistryURL, "/"), strings.TrimRight(cfg.BoxURL, "/"), cfg.Token
	var digest string
	if *files {
		digest, err = PushFiles(ctx, registryURL, cfg.RegistryUsername, cfg.RegistryPassword, *repo, *version, flags.Args())
	} else {
		digest, err = Push(ctx, registryURL, cfg.RegistryUsername, cfg.RegistryPassword, *repo, *version, flags.Arg(0))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "pushed %s:%s %s\n", *repo, *version, digest)
	created, err := publishRelease(ctx, boxURL, token, *repo, *version, *notes)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(env.Stdout, "published release %s %s at box\n", *repo, *version)
	} else {
		fmt.Fprintf(env.Stdout, "release %s %s was already published at box\n", *repo, *version)
	}
	return nil
}

// Push writes the image or index at path (an OCI image layout directory or
// an image tarball) to registryURL as repo:version and returns its digest.
func Push(ctx context.Context, registryURL, user, pass, repo, version, path string) (string, error) {
	u, err := url.Parse(registryURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("KEYHOLDER_REGISTRY_URL: must be an absolute http(s) URL")
	}
	var opts []name.Option
	if u.Scheme == "http" {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(u.Host+"/"+repo+":"+version, opts...)
	if err != nil {
		return "", fmt.Errorf("reference: %w", err)
	}
	auth := authn.Anonymous
	if user != "" {
		auth = &authn.Basic{Username: user, Password: pass}
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth)}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return "", fmt.Errorf("%s: not an image tarball: %w", path, err)
		}
		if err := remote.Write(tag, img, ropts...); err != nil {
			return "", fmt.Errorf("push: %w", err)
		}
		d, err := img.Digest()
		return d.String(), err
	}
	lp, err := layout.FromPath(path)
	if err != nil {
		return "", fmt.Errorf("%s: not an OCI image layout: %w", path, err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if len(im.Manifests) == 0 {
		return "", fmt.Errorf("%s: the layout holds no manifest", path)
	}
	if len(im.Manifests) > 1 {
		// Several top-level manifests: the layout's own index is the unit.
		if err := remote.WriteIndex(tag, idx, ropts...); err != nil {
			return "", fmt.Errorf("push: %w", err)
		}
		d, err := idx.Digest()
		return d.String(), err
	}
	desc := im.Manifests[0]
	if desc.MediaType.IsIndex() {
		child, err := idx.ImageIndex(desc.Digest)
		if err != nil {
			return "", err
		}
		if err := remote.WriteIndex(tag, child, ropts...); err != nil {
			return "", fmt.Errorf("push: %w", err)
		}
		return desc.Digest.String(), nil
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, img, ropts...); err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	return desc.Digest.String(), nil
}

// publishRelease posts the release to box; created is false when box
// already had it (409).
func publishRelease(ctx context.Context, boxURL, token, product, version, notes string) (created bool, err error) {
	body := map[string]any{"product": product, "version": version}
	if notes != "" {
		body["notes"] = notes
	}
	raw, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(boxURL, "/")+"/v1/operator/releases", bytes.NewReader(raw))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return false, fmt.Errorf("BOX_URL: %v", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch resp.StatusCode {
	case http.StatusCreated:
		return true, nil
	case http.StatusConflict:
		return false, nil
	default:
		return false, fmt.Errorf("box refused the release: %s %s", resp.Status, strings.TrimSpace(string(msg)))
	}
}
