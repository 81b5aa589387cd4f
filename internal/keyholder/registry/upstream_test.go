package registry

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOpenBlob: a blob is read over a connection of its own, and whatever
// the upstream answers (a whole body, a redirect to storage, a body cut
// short, a chunked one) reads back exactly or fails.
func TestOpenBlob(t *testing.T) {
	const body = "layer bytes, all of them"
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/r/blobs/whole", func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); u != "kh" || p != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Length", "24")
		_, _ = io.WriteString(w, body)
	})
	mux.HandleFunc("/v2/r/blobs/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/storage/whole", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/storage/whole", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	})
	mux.HandleFunc("/v2/r/blobs/chunked", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body[:5])
		http.NewResponseController(w).Flush()
		_, _ = io.WriteString(w, body[5:])
	})
	mux.HandleFunc("/v2/r/blobs/short", func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + body)
		_ = brw.Flush()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u := NewUpstream(srv.URL, "kh", "secret")
	t.Cleanup(u.Close)

	tests := []struct {
		name    string
		path    string
		raw     bool
		want    string
		wantErr error
	}{
		{"OKWholeIsRaw", "/v2/r/blobs/whole", true, body, nil},
		{"OKRedirectFollowed", "/v2/r/blobs/moved", false, body, nil},
		{"OKChunkedReadAsUsual", "/v2/r/blobs/chunked", false, body, nil},
		{"ErrCutShort", "/v2/r/blobs/short", true, body, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := u.openBlob(context.Background(), http.MethodGet, tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, raw := resp.Body.(*rawBody); raw != tt.raw {
				t.Errorf("raw body: got %v, want %v", raw, tt.raw)
			}
			got, err := io.ReadAll(resp.Body)
			if string(got) != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %q %v, want %q %v", got, err, tt.want, tt.wantErr)
			}
		})
	}

	t.Run("OKSplicedToAConnection", func(t *testing.T) {
		resp, err := u.openBlob(context.Background(), http.MethodGet, "/v2/r/blobs/whole", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw := resp.Body.(*rawBody)
		a, b := tcpPair(t)
		done := make(chan string)
		go func() {
			got, _ := io.ReadAll(bufio.NewReader(b))
			done <- string(got)
		}()
		n, err := raw.copyTo(a, a.(*net.TCPConn))
		a.Close()
		if got := <-done; err != nil || n != int64(len(body)) || got != body {
			t.Errorf("copyTo: %d %v, received %q", n, err, got)
		}
	})
}

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
