package config

// This file is the hand-made reader that Load replaces; the gateway still
// uses it until its configuration moves to Load, and then it goes.

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through getenv and keeps the first error.
type Reader struct {
	getenv func(string) string
	err    error
}

// New returns a Reader over getenv.
func New(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// Err returns the first problem found, if any.
func (r *Reader) Err() error { return r.err }

func (r *Reader) fail(name, rule string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s", name, rule)
	}
}

// String returns the variable, trimmed, or def when it is unset or blank.
func (r *Reader) String(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

// Duration reads a Go duration that must be positive.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(name, fmt.Sprintf("must be a positive Go duration such as %s, got %q", def, v))
		return def
	}
	return d
}

// PositiveInt reads an integer that must be at least 1.
func (r *Reader) PositiveInt(name string, def int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		r.fail(name, fmt.Sprintf("must be a positive integer, got %q", v))
		return def
	}
	return n
}

// NonNegativeInt reads an integer that must be at least 0.
func (r *Reader) NonNegativeInt(name string, def int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		r.fail(name, fmt.Sprintf("must be a whole number (0 or more), got %q", v))
		return def
	}
	return n
}

// Port reads a TCP port number.
func (r *Reader) Port(name string, def int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		r.fail(name, fmt.Sprintf("must be a port number from 0 to 65535, got %q", v))
		return def
	}
	return n
}

// URL reads an absolute http or https URL (or "" when unset and optional).
func (r *Reader) URL(name string) string {
	v := r.String(name, "")
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.fail(name, fmt.Sprintf("must be an absolute http(s) URL, got %q", v))
		return ""
	}
	return strings.TrimRight(v, "/")
}

// LoopbackAddr reads a host:port whose host is a loopback address
// (127.0.0.0/8, ::1 or localhost), or "" when unset. It is for listeners
// that must never face the network, such as the profiling endpoints.
func (r *Reader) LoopbackAddr(name string) string {
	v := r.String(name, "")
	if v == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(v)
	ip := net.ParseIP(host)
	_, perr := strconv.Atoi(port)
	if err != nil || perr != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		r.fail(name, fmt.Sprintf("must be a loopback host:port such as 127.0.0.1:6060, got %q", v))
		return ""
	}
	return v
}

// Key32 reads the base64 encoding of exactly 32 bytes (standard or URL
// alphabet, padded or not). It never echoes the value: it is a secret.
func (r *Reader) Key32(name string) []byte {
	v := r.String(name, "")
	if v == "" {
		return nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			if len(b) == 32 {
				return b
			}
			break
		}
	}
	r.fail(name, "must be the base64 encoding of exactly 32 bytes")
	return nil
}

// Require records a problem when the variable is unset.
func (r *Reader) Require(name, why string) {
	if r.String(name, "") == "" {
		r.fail(name, "is required "+why)
	}
}
