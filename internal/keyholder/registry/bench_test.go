package registry_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
)

// BenchmarkThroughKeyholder compares the same requests made through
// keyholder and straight to the upstream registry, in one run: a manifest
// by tag (keyholder adds the credential check, the range check and the
// pull record) and a 32 MiB layer (keyholder adds the reachability check,
// then streams).
func BenchmarkThroughKeyholder(b *testing.B) {
	p := keyholdertest.Start(b, sqldb.SQLite, keyholdertest.Options{})
	img := p.PushImage("kit", "1.0.0", 32<<20, 1)
	layer := layerOf(b, img)
	_, cred := p.Entitled("bench@example.com", "kit", "")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	get := func(b *testing.B, url string, auth bool, accept string) int64 {
		req, _ := http.NewRequest("GET", url, nil)
		if auth {
			req.SetBasicAuth(cred.Username, cred.Password)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", url, resp.StatusCode)
		}
		return n
	}
	const manifestType = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
	for _, tc := range []struct {
		name string
		base string
		auth bool
	}{{"direct", p.RegistryURL, false}, {"keyholder", p.KeyholderURL, true}} {
		b.Run("manifest-by-tag/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				get(b, tc.base+"/v2/kit/manifests/1.0.0", tc.auth, manifestType)
			}
		})
		b.Run("blob-32MiB/"+tc.name, func(b *testing.B) {
			b.SetBytes(32 << 20)
			for b.Loop() {
				get(b, tc.base+"/v2/kit/blobs/"+layer, tc.auth, "")
			}
		})
	}
}
