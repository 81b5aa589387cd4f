package registry_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	orasremote "oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) ociCode() string {
	var e struct {
		Errors []struct{ Code string } `json:"errors"`
	}
	_ = json.Unmarshal(a.body, &e)
	if len(e.Errors) == 0 {
		return ""
	}
	return e.Errors[0].Code
}

func send(t *testing.T, method, url string, cred *keyholdertest.Credential, header map[string]string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if cred != nil {
		req.SetBasicAuth(cred.Username, cred.Password)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, body}
}

func digestOf(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func layerOf(t testing.TB, img v1.Image) string {
	t.Helper()
	ls, err := img.Layers()
	if err != nil || len(ls) == 0 {
		t.Fatalf("layers: %v", err)
	}
	d, _ := ls[0].Digest()
	return d.String()
}

func TestFront(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		in := p.PushImage("platform", "1.2.0", 2048, 2)
		in13 := p.PushImage("platform", "1.3.0", 1024, 1)
		out := p.PushImage("platform", "2.0.0", 1024, 1)
		p.Push("platform", "latest", out)
		rc := p.PushImage("platform", "1.2.5-rc1", 1024, 1)
		idx := p.PushIndex("platform", "1.4.0", 2)
		outIdx := p.PushIndex("platform", "2.1.0", 1)
		kit := p.PushImage("kit", "1.0.0", 512, 1)
		c, cred := p.Entitled("buyer@example.com", "platform", "^1.2.0")
		base := p.KeyholderURL + "/v2/"
		im, _ := idx.IndexManifest()
		child := im.Manifests[0].Digest.String()
		childImg, _ := idx.Image(im.Manifests[0].Digest)
		outIm, _ := outIdx.IndexManifest()

		tests := []struct {
			name, method, path string
			cred               *keyholdertest.Credential
			header             map[string]string
			want               int
			wantCode           string
		}{
			{"NoCredential", "GET", "", nil, nil, http.StatusUnauthorized, "UNAUTHORIZED"},
			{"WrongPassword", "GET", "", &keyholdertest.Credential{Username: cred.Username, Password: "khp_wrong"}, nil, http.StatusUnauthorized, "UNAUTHORIZED"},
			{"MalformedUsername", "GET", "", &keyholdertest.Credential{Username: "cap_../../x", Password: cred.Password}, nil, http.StatusUnauthorized, "UNAUTHORIZED"},
			{"Base", "GET", "", &cred, nil, http.StatusOK, ""},
			{"PushStart", "POST", "platform/blobs/uploads/", &cred, nil, http.StatusUnauthorized, "DENIED"},
			{"PutManifest", "PUT", "platform/manifests/1.2.0", &cred, nil, http.StatusUnauthorized, "DENIED"},
			{"Patch", "PATCH", "platform/blobs/uploads/x", &cred, nil, http.StatusUnauthorized, "DENIED"},
			{"Delete", "DELETE", "platform/manifests/" + digestOf(t, in), &cred, nil, http.StatusUnauthorized, "DENIED"},
			{"AnonymousWrite", "PUT", "platform/manifests/9.9.9", nil, nil, http.StatusUnauthorized, "DENIED"},
			{"OtherRepository", "GET", "kit/tags/list", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"OtherRepositoryManifest", "GET", "kit/manifests/1.0.0", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"OtherRepositoryBlob", "GET", "kit/blobs/" + layerOf(t, kit), &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"MissingRepository", "GET", "nothing/tags/list", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"Catalog", "GET", "_catalog", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"InRangeTag", "GET", "platform/manifests/1.2.0", &cred, nil, http.StatusOK, ""},
			{"InRangeTagHead", "HEAD", "platform/manifests/1.4.0", &cred, nil, http.StatusOK, ""},
			{"OutOfRangeTag", "GET", "platform/manifests/2.0.0", &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"NonVersionTag", "GET", "platform/manifests/latest", &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"PrereleaseTag", "GET", "platform/manifests/1.2.5-rc1", &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"LeadingZeroTag", "GET", "platform/manifests/01.2.0", &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"MissingInRangeTag", "GET", "platform/manifests/1.9.9", &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"InRangeDigest", "GET", "platform/manifests/" + digestOf(t, in13), &cred, nil, http.StatusOK, ""},
			{"IndexChildDigest", "GET", "platform/manifests/" + child, &cred, nil, http.StatusOK, ""},
			{"OutOfRangeDigest", "GET", "platform/manifests/" + digestOf(t, out), &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"PrereleaseDigest", "GET", "platform/manifests/" + digestOf(t, rc), &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"OutOfRangeIndexChild", "GET", "platform/manifests/" + outIm.Manifests[0].Digest.String(), &cred, nil, http.StatusNotFound, "MANIFEST_UNKNOWN"},
			{"InRangeBlob", "GET", "platform/blobs/" + layerOf(t, in), &cred, nil, http.StatusOK, ""},
			{"IndexChildBlob", "GET", "platform/blobs/" + layerOf(t, childImg), &cred, nil, http.StatusOK, ""},
			{"InRangeBlobHead", "HEAD", "platform/blobs/" + layerOf(t, in), &cred, nil, http.StatusOK, ""},
			{"OutOfRangeBlob", "GET", "platform/blobs/" + layerOf(t, out), &cred, nil, http.StatusNotFound, "BLOB_UNKNOWN"},
			{"OtherRepositoryBlobUnderOwnName", "GET", "platform/blobs/" + layerOf(t, kit), &cred, nil, http.StatusNotFound, "BLOB_UNKNOWN"},
			{"NonSHA256Blob", "GET", "platform/blobs/sha512:" + strings.Repeat("a", 128), &cred, nil, http.StatusNotFound, "BLOB_UNKNOWN"},
			{"MalformedBlobDigest", "GET", "platform/blobs/sha256:abc", &cred, nil, http.StatusBadRequest, "DIGEST_INVALID"},
			{"UppercaseBlobDigest", "GET", "platform/blobs/" + strings.ToUpper(layerOf(t, in)), &cred, nil, http.StatusBadRequest, "DIGEST_INVALID"},
			{"MalformedManifestDigest", "GET", "platform/manifests/sha256:" + strings.Repeat("z", 64), &cred, nil, http.StatusBadRequest, "DIGEST_INVALID"},
			{"MalformedManifestDigestHead", "HEAD", "platform/manifests/sha256:abc", &cred, nil, http.StatusBadRequest, ""},
			{"BlobByTag", "GET", "platform/blobs/1.2.0", &cred, nil, http.StatusBadRequest, "DIGEST_INVALID"},
			// Another repository's malformed digest reveals nothing.
			{"OtherRepositoryMalformedDigest", "GET", "kit/blobs/sha256:abc", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"EncodedSlash", "GET", "platform%2F..%2Fkit/tags/list", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
			{"UppercaseName", "GET", "PLATFORM/tags/list", &cred, nil, http.StatusNotFound, "NAME_UNKNOWN"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				a := send(t, tt.method, base+tt.path, tt.cred, tt.header)
				if a.status != tt.want {
					t.Fatalf("got %d %s, want %d", a.status, a.body, tt.want)
				}
				if tt.method != "HEAD" && a.ociCode() != tt.wantCode {
					t.Errorf("code: got %q (%s), want %q", a.ociCode(), a.body, tt.wantCode)
				}
				if a.status == http.StatusUnauthorized && !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Basic realm=") {
					t.Errorf("WWW-Authenticate: got %q, want a Basic challenge", a.header.Get("WWW-Authenticate"))
				}
				if a.header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
					t.Errorf("Docker-Distribution-API-Version: got %q", a.header.Get("Docker-Distribution-API-Version"))
				}
				if strings.Contains(string(a.body), p.RegistryHost) {
					t.Errorf("the body names the upstream: %s", a.body)
				}
			})
		}

		t.Run("TagListFiltered", func(t *testing.T) {
			for _, tc := range []struct {
				query string
				want  []string
				link  bool
			}{
				{"", []string{"1.2.0", "1.3.0", "1.4.0"}, false},
				{"?n=2", []string{"1.2.0", "1.3.0"}, true},
				{"?n=2&last=1.3.0", []string{"1.4.0"}, false},
				{"?last=1.2.0", []string{"1.3.0", "1.4.0"}, false},
			} {
				a := send(t, "GET", base+"platform/tags/list"+tc.query, &cred, nil)
				var list struct {
					Name string
					Tags []string
				}
				_ = json.Unmarshal(a.body, &list)
				if a.status != 200 || list.Name != "platform" || strings.Join(list.Tags, ",") != strings.Join(tc.want, ",") {
					t.Errorf("%s: got %d %s, want %v", tc.query, a.status, a.body, tc.want)
				}
				if got := a.header.Get("Link") != ""; got != tc.link {
					t.Errorf("%s: Link %q, want present %v", tc.query, a.header.Get("Link"), tc.link)
				}
			}
		})

		t.Run("BlobRange", func(t *testing.T) {
			whole := send(t, "GET", base+"platform/blobs/"+layerOf(t, in), &cred, nil)
			part := send(t, "GET", base+"platform/blobs/"+layerOf(t, in), &cred, map[string]string{"Range": "bytes=10-19"})
			if part.status != http.StatusPartialContent || string(part.body) != string(whole.body[10:20]) {
				t.Errorf("range: got %d (%d bytes), want 206 with bytes 10-19", part.status, len(part.body))
			}
			if !strings.HasPrefix(part.header.Get("Content-Range"), "bytes 10-19/") {
				t.Errorf("Content-Range: got %q", part.header.Get("Content-Range"))
			}
		})

		t.Run("UnsatisfiableRange", func(t *testing.T) {
			// The answer's Content-Length is the body it sends: a
			// client reading it whole meets no early end.
			a := send(t, "GET", base+"platform/blobs/"+layerOf(t, in), &cred, map[string]string{"Range": "bytes=999999999-"})
			if a.status != http.StatusRequestedRangeNotSatisfiable {
				t.Fatalf("got %d, want 416", a.status)
			}
			if cl := a.header.Get("Content-Length"); cl != strconv.Itoa(len(a.body)) {
				t.Errorf("Content-Length %q with a body of %d bytes", cl, len(a.body))
			}
		})

		t.Run("PullsRecorded", func(t *testing.T) {
			var out struct {
				Pulls []struct {
					Credential, Repository, Tag, Digest string
				}
			}
			st, raw := p.Call("GET", p.KeyholderURL+"/v1/accounts/"+c.AccountID+"/pulls", c.Token, nil, &out)
			// A GET of a manifest by tag counts (1.2.0), and so does a
			// GET by the digest a tag names itself (1.3.0's), under that
			// tag; a HEAD (1.4.0), a GET of an index's child and the
			// refusals do not. Newest first.
			if st != 200 || len(out.Pulls) != 2 ||
				out.Pulls[0].Tag != "1.3.0" || out.Pulls[0].Digest != digestOf(t, in13) ||
				out.Pulls[1].Tag != "1.2.0" || out.Pulls[1].Digest != digestOf(t, in) ||
				out.Pulls[1].Credential != cred.Username || out.Pulls[1].Repository != "platform" {
				t.Errorf("got %d %s, want pulls of 1.3.0 then 1.2.0 by %s", st, raw, cred.Username)
			}
		})

		t.Run("StaffReadsPulls", func(t *testing.T) {
			// The operator console's read: the same record for staff, and
			// refusals for everyone else.
			staff := p.KeyholderURL + "/v1/operator/accounts/" + c.AccountID + "/pulls"
			var out struct {
				Pulls []struct{ Tag, Credential string }
			}
			st, raw := p.Call("GET", staff, p.StaffToken, nil, &out)
			if st != 200 || len(out.Pulls) != 2 || out.Pulls[0].Tag != "1.3.0" || out.Pulls[1].Tag != "1.2.0" || out.Pulls[1].Credential != cred.Username {
				t.Errorf("staff: got %d %s, want the account's two pulls", st, raw)
			}
			for _, tt := range []struct {
				name, url, token string
				status           int
				code             string
			}{
				{"ErrNotStaff", staff, c.Token, http.StatusForbidden, `"forbidden"`},
				{"ErrNoToken", staff, "", http.StatusUnauthorized, `"unauthenticated"`},
				{"ErrMalformedID", p.KeyholderURL + "/v1/operator/accounts/not-a-uuid/pulls", p.StaffToken, http.StatusNotFound, `"not_found"`},
				{"UnknownAccountHasNone", p.KeyholderURL + "/v1/operator/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d/pulls", p.StaffToken, http.StatusOK, `{"pulls":[],"next_cursor":null}`},
			} {
				if st, raw := p.Call("GET", tt.url, tt.token, nil, nil); st != tt.status || !strings.Contains(string(raw), tt.code) {
					t.Errorf("%s: got %d %s, want %d %s", tt.name, st, raw, tt.status, tt.code)
				}
			}
		})

		t.Run("CranePull", func(t *testing.T) {
			ref := p.KeyholderURL[len("http://"):] + "/platform:1.2.0"
			img, err := crane.Pull(ref, crane.Insecure, crane.WithAuth(&authn.Basic{Username: cred.Username, Password: cred.Password}))
			if err != nil {
				t.Fatalf("crane pull: %v", err)
			}
			if got := digestOf(t, img); got != digestOf(t, in) {
				t.Errorf("digest: got %s, want %s", got, digestOf(t, in))
			}
			// Every layer comes through and verifies.
			ls, _ := img.Layers()
			for _, l := range ls {
				rc, err := l.Compressed()
				if err != nil {
					t.Fatalf("layer: %v", err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					t.Errorf("layer read: %v", err)
				}
				if err := rc.Close(); err != nil {
					t.Errorf("layer verify: %v", err)
				}
			}
			if _, err := crane.Pull(p.KeyholderURL[len("http://"):]+"/platform:2.0.0", crane.Insecure,
				crane.WithAuth(&authn.Basic{Username: cred.Username, Password: cred.Password})); err == nil {
				t.Errorf("crane pulled an out-of-range version")
			}
		})

		t.Run("OrasPull", func(t *testing.T) {
			host := p.KeyholderURL[len("http://"):]
			repo, err := orasremote.NewRepository(host + "/platform")
			if err != nil {
				t.Fatal(err)
			}
			repo.PlainHTTP = true
			repo.Client = &auth.Client{Credential: auth.StaticCredential(host, auth.Credential{Username: cred.Username, Password: cred.Password})}
			dst := memory.New()
			desc, err := oras.Copy(context.Background(), repo, "1.4.0", dst, "1.4.0", oras.DefaultCopyOptions)
			if err != nil {
				t.Fatalf("oras copy: %v", err)
			}
			wantIdx, _ := idx.Digest()
			if desc.Digest.String() != wantIdx.String() {
				t.Errorf("digest: got %s, want %s", desc.Digest, wantIdx)
			}
			if _, err := oras.Copy(context.Background(), repo, "2.1.0", memory.New(), "2.1.0", oras.DefaultCopyOptions); err == nil {
				t.Errorf("oras copied an out-of-range index")
			}
		})
	})
}

func TestFrontWhenRegistryIsDown(t *testing.T) {
	sqltest.Run(t, frontWhenRegistryIsDown)
}

func frontWhenRegistryIsDown(t *testing.T, engine sqldb.Engine) {
	p := keyholdertest.Start(t, engine, keyholdertest.Options{})
	p.PushImage("kit", "1.0.0", 512, 1)
	_, cred := p.Entitled("down@example.com", "kit", "")
	p.StopRegistry()
	for _, path := range []string{"kit/tags/list", "kit/manifests/1.0.0", "kit/blobs/sha256:" + strings.Repeat("0", 64)} {
		a := send(t, "GET", p.KeyholderURL+"/v2/"+path, &cred, nil)
		if a.status != http.StatusBadGateway || a.ociCode() != "UNAVAILABLE" {
			t.Errorf("%s: got %d %s, want 502 UNAVAILABLE", path, a.status, a.body)
		}
		if strings.Contains(string(a.body), p.RegistryHost) {
			t.Errorf("%s: the body names the upstream: %s", path, a.body)
		}
	}
}

// TestFrontWhenDatabaseIsDown: with keyholder's database gone, a
// credential cannot be checked, and the front fails closed with 503 and
// an OCI body rather than letting anything through.
func TestFrontWhenDatabaseIsDown(t *testing.T) {
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		t.Skip("TEST_DATABASE_URL not set: stopping a database needs PostgreSQL")
	}
	p := keyholdertest.Start(t, sqldb.Postgres, keyholdertest.Options{})
	p.PushImage("kit", "1.0.0", 512, 1)
	_, cred := p.Entitled("nodb@example.com", "kit", "")
	u, _ := url.Parse(p.KeyholderDB)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP DATABASE " + strings.TrimPrefix(u.Path, "/") + " WITH (FORCE)"); err != nil {
		t.Fatalf("drop: %v", err)
	}
	for _, path := range []string{"", "kit/tags/list", "kit/manifests/1.0.0"} {
		a := send(t, "GET", p.KeyholderURL+"/v2/"+path, &cred, nil)
		if a.status != http.StatusServiceUnavailable || a.ociCode() != "UNAVAILABLE" {
			t.Errorf("/v2/%s: got %d %s, want 503 UNAVAILABLE", path, a.status, a.body)
		}
	}
}
