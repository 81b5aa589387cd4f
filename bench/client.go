package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// newClient returns the load generator's HTTP client: keep-alive
// connections, enough idle ones for the highest concurrency, no
// compression (the services do not compress either).
func newClient(maxConns int) *http.Client {
	t := &http.Transport{
		MaxIdleConns:        maxConns * 4,
		MaxIdleConnsPerHost: maxConns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// statusError is an answer other than the expected status.
type statusError struct {
	method, path string
	status, want int
}

func (e statusError) Error() string {
	return fmt.Sprintf("%s %s: status %d, want %d", e.method, e.path, e.status, e.want)
}

// request is a prepared call: the same method, URL, token and body every
// time, checked for one status. The body is read to the end so the
// connection is reused.
type request struct {
	client *http.Client
	method string
	url    string
	path   string
	token  string
	body   []byte
	want   int
	// header is added to the request (nil for none).
	header http.Header
}

func (r request) do(ctx context.Context) error {
	_, err := r.read(ctx, nil)
	return err
}

// read performs the call and, when into is non-nil, decodes the JSON answer.
func (r request) read(ctx context.Context, into any) (int, error) {
	var rd io.Reader
	if r.body != nil {
		rd = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, rd)
	if err != nil {
		return 0, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	res, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != r.want {
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, statusError{r.method, r.path, res.StatusCode, r.want}
	}
	if into != nil {
		return res.StatusCode, json.NewDecoder(res.Body).Decode(into)
	}
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// callJSON is the setup's client: one JSON call, its status and decoded
// answer.
func callJSON(ctx context.Context, c *http.Client, method, url, token string, body any) (int, map[string]any, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, nil, err
	}
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 && raw[0] == '{' {
		_ = json.Unmarshal(raw, &out)
	}
	return res.StatusCode, out, raw, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
