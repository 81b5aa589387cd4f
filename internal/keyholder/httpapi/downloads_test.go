package httpapi_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

type download struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, method, url, token string, header map[string]string) download {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
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
	return download{resp.StatusCode, resp.Header, body}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

type listing struct {
	Repository string `json:"repository"`
	Version    string `json:"version"`
	Digest     string `json:"digest"`
	Files      []struct {
		Name   string `json:"name"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"files"`
}

// TestDownloads: a files artifact pushed with ORAS is listed with sizes
// and SHA-256 and downloaded byte-identical, with its name, ETag,
// Repr-Digest and Range; each download that starts the file is one pull;
// what names no file (a path in the name included) is 404, and box's
// refusals pass on.
func TestDownloads(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		tarball := randomBytes(t, 300<<10)
		notes := []byte("checksums and notes\n")
		p.PushFiles("platform", "1.2.0", map[string][]byte{"platform-linux-amd64.tar.gz": tarball, "NOTES.txt": notes})
		p.PushFiles("platform", "2.0.0", map[string][]byte{"platform-linux-amd64.tar.gz": randomBytes(t, 64)})
		p.PushImage("platform", "1.3.0", 512, 1)
		c := p.NewCustomer("buyer@example.com")
		p.Grant(c, "platform", "^1.2.0")
		stranger := p.NewCustomer("stranger@example.com")
		base := p.KeyholderURL + "/v1/accounts/" + c.AccountID + "/downloads/platform/"
		pulls := func() int {
			return count(t, p.KeyholderDB, `SELECT count(*) FROM pulls WHERE file IS NOT NULL`)
		}

		var l listing
		if st, raw := p.Call("GET", base+"1.2.0", c.Token, nil, &l); st != http.StatusOK {
			t.Fatalf("list: %d %s", st, raw)
		}
		sum := sha256.Sum256(tarball)
		if l.Repository != "platform" || l.Version != "1.2.0" || !strings.HasPrefix(l.Digest, "sha256:") || len(l.Files) != 2 {
			t.Fatalf("list = %+v, want platform 1.2.0 with two files", l)
		}
		for _, f := range l.Files {
			if f.Name == "platform-linux-amd64.tar.gz" && (f.Size != int64(len(tarball)) || f.SHA256 != hex.EncodeToString(sum[:])) {
				t.Errorf("tarball listed as %+v, want size %d sha256 %x", f, len(tarball), sum)
			}
		}
		var img listing
		if st, raw := p.Call("GET", base+"1.3.0", c.Token, nil, &img); st != http.StatusOK || len(img.Files) != 0 || img.Files == nil {
			t.Errorf("an image's release = %d %s, want 200 with no file", st, raw)
		}

		file := base + "1.2.0/files/platform-linux-amd64.tar.gz"
		got := get(t, "GET", file, c.Token, nil)
		if got.status != http.StatusOK || !bytes.Equal(got.body, tarball) {
			t.Fatalf("download = %d, %d bytes; want 200 and the %d bytes pushed", got.status, len(got.body), len(tarball))
		}
		wantHeaders := map[string]string{
			"Content-Disposition": `attachment; filename=platform-linux-amd64.tar.gz`,
			"Etag":                `"sha256:` + hex.EncodeToString(sum[:]) + `"`,
			"Repr-Digest":         "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":",
			"Accept-Ranges":       "bytes",
			"Content-Type":        "application/octet-stream",
		}
		for k, v := range wantHeaders {
			if got.header.Get(k) != v {
				t.Errorf("%s = %q, want %q", k, got.header.Get(k), v)
			}
		}
		if n := pulls(); n != 1 {
			t.Errorf("downloads counted = %d, want 1", n)
		}
		var record struct {
			Pulls []struct {
				File   *string `json:"file"`
				Tag    string  `json:"tag"`
				Digest string  `json:"digest"`
			} `json:"pulls"`
		}
		if st, raw := p.Call("GET", p.KeyholderURL+"/v1/accounts/"+c.AccountID+"/pulls", c.Token, nil, &record); st != http.StatusOK ||
			len(record.Pulls) != 1 || record.Pulls[0].File == nil || *record.Pulls[0].File != "platform-linux-amd64.tar.gz" ||
			record.Pulls[0].Tag != "1.2.0" || record.Pulls[0].Digest != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("pull record = %d %s, want the download of the tarball at 1.2.0", st, raw)
		}

		// A resumed download is not another one; a range from byte 0 is.
		part := get(t, "GET", file, c.Token, map[string]string{"Range": "bytes=1000-1999"})
		if part.status != http.StatusPartialContent || !bytes.Equal(part.body, tarball[1000:2000]) ||
			part.header.Get("Content-Range") != "bytes 1000-1999/"+strconv.Itoa(len(tarball)) {
			t.Errorf("range = %d %d bytes %q, want 206 with bytes 1000-1999", part.status, len(part.body), part.header.Get("Content-Range"))
		}
		stale := get(t, "GET", file, c.Token, map[string]string{"Range": "bytes=1000-1999", "If-Range": `"sha256:` + strings.Repeat("0", 64) + `"`})
		if stale.status != http.StatusOK || !bytes.Equal(stale.body, tarball) {
			t.Errorf("range with a stale If-Range = %d, want the whole file", stale.status)
		}
		if h := get(t, "HEAD", file, c.Token, nil); h.status != http.StatusOK || h.header.Get("Content-Length") != strconv.Itoa(len(tarball)) {
			t.Errorf("HEAD = %d length %q", h.status, h.header.Get("Content-Length"))
		}
		if nm := get(t, "GET", file, c.Token, map[string]string{"If-None-Match": wantHeaders["Etag"]}); nm.status != http.StatusNotModified || len(nm.body) != 0 {
			t.Errorf("If-None-Match = %d, want 304", nm.status)
		}
		if n := pulls(); n != 2 {
			t.Errorf("downloads counted = %d, want 2 (the first and the one with a stale If-Range)", n)
		}
		if bad := get(t, "GET", file, c.Token, map[string]string{"Range": "bytes=999999999-"}); bad.status != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("unsatisfiable range = %d, want 416", bad.status)
		}

		key := p.APIKey(c, "artifacts:fetch")
		readOnly := p.APIKey(c, "account:read")
		tests := []struct {
			name, url, token string
			want             int
			wantCode         string
		}{
			{"APIKey", file, key, http.StatusOK, ""},
			{"APIKeyList", base + "1.2.0", key, http.StatusOK, ""},
			{"APIKeyWithoutScope", file, readOnly, http.StatusForbidden, "insufficient_scope"},
			{"NoToken", file, "", http.StatusUnauthorized, "unauthenticated"},
			{"NotAMember", file, stranger.Token, http.StatusNotFound, "not_found"},
			{"OutOfRange", base + "2.0.0/files/platform-linux-amd64.tar.gz", c.Token, http.StatusForbidden, "version_not_granted"},
			{"OutOfRangeList", base + "2.0.0", c.Token, http.StatusForbidden, "version_not_granted"},
			{"NotEntitled", p.KeyholderURL + "/v1/accounts/" + c.AccountID + "/downloads/courier/1.2.0", c.Token, http.StatusForbidden, "entitlement_required"},
			{"UnknownProduct", p.KeyholderURL + "/v1/accounts/" + c.AccountID + "/downloads/secret/1.2.0", c.Token, http.StatusNotFound, "not_found"},
			{"NotAVersion", base + "latest", c.Token, http.StatusNotFound, "not_found"},
			{"MissingVersion", base + "1.9.9", c.Token, http.StatusNotFound, "not_found"},
			{"MalformedAccount", p.KeyholderURL + "/v1/accounts/nope/downloads/platform/1.2.0", c.Token, http.StatusNotFound, "not_found"},
			{"UnknownFile", base + "1.2.0/files/other.tar.gz", c.Token, http.StatusNotFound, "not_found"},
			{"EncodedSlash", base + "1.2.0/files/..%2FNOTES.txt", c.Token, http.StatusNotFound, "not_found"},
			{"EncodedBackslash", base + "1.2.0/files/x%5CNOTES.txt", c.Token, http.StatusNotFound, "not_found"},
			{"EncodedDotDot", base + "1.2.0/files/%2E%2E", c.Token, http.StatusNotFound, "not_found"},
			{"Slash", base + "1.2.0/files/dir/NOTES.txt", c.Token, http.StatusNotFound, "not_found"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var e errorBody
				got := get(t, "GET", tt.url, tt.token, nil)
				_ = json.Unmarshal(got.body, &e)
				if got.status != tt.want || (tt.wantCode != "" && e.Error.Code != tt.wantCode) {
					t.Errorf("GET %s = %d %s, want %d %s", tt.url, got.status, got.body, tt.want, tt.wantCode)
				}
			})
		}
		if n := pulls(); n != 3 {
			t.Errorf("downloads counted = %d, want 3 (the API key's one more)", n)
		}
	})
}

// TestDownloadWhenBoxIsDown: box unreachable is 503 and nothing counted.
func TestDownloadWhenBoxIsDown(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + ln.Addr().String()
		ln.Close()
		p := keyholdertest.Start(t, engine, keyholdertest.Options{BoxURL: closed})
		p.PushFiles("platform", "1.2.0", map[string][]byte{"a.txt": []byte("a")})
		c := p.NewCustomer("buyer@example.com")
		p.Grant(c, "platform", "")
		for _, path := range []string{"", "/files/a.txt"} {
			var e errorBody
			got := get(t, "GET", p.KeyholderURL+"/v1/accounts/"+c.AccountID+"/downloads/platform/1.2.0"+path, c.Token, nil)
			_ = json.Unmarshal(got.body, &e)
			if got.status != http.StatusServiceUnavailable || e.Error.Code != "unavailable" {
				t.Errorf("with box down: %d %s, want 503 unavailable", got.status, got.body)
			}
		}
		if n := count(t, p.KeyholderDB, `SELECT count(*) FROM pulls`); n != 0 {
			t.Errorf("pulls = %d with box down, want 0", n)
		}
	})
}
