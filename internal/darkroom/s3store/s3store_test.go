package s3store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/devs3"
	"github.com/platformco/platform/internal/darkroom/s3store"
)

const bucket = "media"

// gofakes3 starts the development store over a temporary directory.
func gofakes3(t *testing.T) *s3store.Store {
	t.Helper()
	h, err := devs3.New(devs3.Development, t.TempDir(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := s3store.New(s3store.Options{Endpoint: srv.URL, Region: s3store.RegionAuto, Bucket: bucket,
		AccessKeyID: "dev", SecretAccessKey: "devdevdev"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// versitygwPath finds versitygw on PATH or in GOPATH/bin; in CI its
// absence fails the test.
func versitygwPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("versitygw is not installed: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
	}
	t.Skip("versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
	return ""
}

// versitygw starts a production S3 server, posix backend on a temporary
// directory, on loopback.
func versitygw(t *testing.T) *s3store.Store {
	t.Helper()
	bin := versitygwPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, bucket), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--access", "darkroomkey", "--secret", "darkroomsecret", "--region", s3store.RegionAuto,
		"--port", addr, "posix", root)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("versitygw:\n%s", logs.String())
		}
	})
	s, err := s3store.New(s3store.Options{Endpoint: "http://" + addr, Region: s3store.RegionAuto, Bucket: bucket,
		AccessKeyID: "darkroomkey", SecretAccessKey: "darkroomsecret"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Ready(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("versitygw never answered: %v", s.Ready(t.Context()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

func presignedPut(t *testing.T, s *s3store.Store, key string, body []byte, declared []byte) *http.Response {
	t.Helper()
	sum := sha256.Sum256(declared)
	put, err := s.PresignPut(t.Context(), key, "image/png", sum[:], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, put.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range put.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func TestStores(t *testing.T) {
	for name, open := range map[string]func(*testing.T) *s3store.Store{"gofakes3": gofakes3, "versitygw": versitygw} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := t.Context()
			if err := s.Ready(ctx); err != nil {
				t.Fatalf("ready: %v", err)
			}
			body := bytes.Repeat([]byte("0123456789"), 1000)

			// A presigned PUT with the declared checksum is kept.
			if res := presignedPut(t, s, "originals/a", body, body); res.StatusCode != http.StatusOK {
				t.Fatalf("presigned PUT = %d", res.StatusCode)
			}
			info, err := s.Stat(ctx, "originals/a")
			if err != nil || info.Size != int64(len(body)) || info.ContentType != "image/png" {
				t.Fatalf("HEAD = %+v, %v", info, err)
			}
			// Ranged GET: a seek is a range.
			obj, _, err := s.Open(ctx, "originals/a")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := obj.Seek(5005, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			part := make([]byte, 10)
			if _, err := io.ReadFull(obj, part); err != nil || string(part) != "5678901234" {
				t.Fatalf("range read %q, %v", part, err)
			}
			obj.Close()

			// A streamed PUT of unknown length.
			if err := s.Put(ctx, "originals/b", bytes.NewReader(body), -1, "image/jpeg"); err != nil {
				t.Fatalf("streamed put: %v", err)
			}
			if info, err := s.Stat(ctx, "originals/b"); err != nil || info.Size != int64(len(body)) {
				t.Fatalf("streamed HEAD = %+v, %v", info, err)
			}

			// A PUT of known length.
			if err := s.Put(ctx, "variants/a/card.webp", bytes.NewReader(body[:77]), 77, "image/webp"); err != nil {
				t.Fatalf("put: %v", err)
			}
			if info, err := s.Stat(ctx, "variants/a/card.webp"); err != nil || info.Size != 77 {
				t.Fatalf("HEAD = %+v, %v", info, err)
			}

			// Delete, then both answers of an absent key.
			for _, k := range []string{"originals/a", "originals/b", "variants/a/card.webp"} {
				if err := s.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Stat(ctx, "originals/a"); !errors.Is(err, darkroom.ErrObjectAbsent) {
				t.Fatalf("HEAD after delete: %v", err)
			}
			if _, _, err := s.Open(ctx, "originals/a"); !errors.Is(err, darkroom.ErrObjectAbsent) {
				t.Fatalf("GET after delete: %v", err)
			}
			if err := s.Delete(ctx, "originals/a"); err != nil {
				t.Fatalf("deleting an absent key: %v", err)
			}
		})
	}
}

// TestVersitygwRefusesAWrongChecksum: a production server checks the
// signed x-amz-checksum-sha256 against the body, so a presigned PUT of
// other bytes is refused and leaves nothing.
func TestVersitygwRefusesAWrongChecksum(t *testing.T) {
	s := versitygw(t)
	res := presignedPut(t, s, "originals/c", []byte("the bytes sent"), []byte("the bytes declared"))
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("PUT with a wrong checksum = %d, want 400", res.StatusCode)
	}
	if _, err := s.Stat(t.Context(), "originals/c"); !errors.Is(err, darkroom.ErrObjectAbsent) {
		t.Fatalf("HEAD: %v", err)
	}
	// Without the signed headers the signature does not match.
	sum := sha256.Sum256([]byte("x"))
	put, err := s.PresignPut(t.Context(), "originals/d", "image/png", sum[:], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, put.URL, strings.NewReader("x"))
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned-header PUT = %d, want 403", r2.StatusCode)
	}
}

func TestDevStoreRefusedOutsideDevelopment(t *testing.T) {
	for _, env := range []string{"", "production", "staging"} {
		if _, err := devs3.New(env, t.TempDir(), bucket); !errors.Is(err, devs3.ErrNotDevelopment) {
			t.Errorf("env %q: %v", env, err)
		}
	}
}
