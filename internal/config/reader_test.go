package config

import (
	"strings"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	env := map[string]string{
		"D_OK": "90s", "D_BAD": "soon", "D_NEG": "-1s",
		"I_OK": "7", "I_BAD": "0", "N_OK": "0", "N_BAD": "-3",
		"P_BAD": "70000", "U_OK": "http://id.example:8081/", "U_BAD": "ftp://x",
		"K_OK": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "K_BAD": "c2hvcnQ=",
		"A_OK": "127.0.0.1:6060", "A_V6": "[::1]:0", "A_PUBLIC": "0.0.0.0:6060", "A_NOPORT": "127.0.0.1", "A_HOST": "example.com:6060",
	}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name    string
		read    func(r *Reader) any
		want    any
		wantErr string
	}{
		{"DurationOK", func(r *Reader) any { return r.Duration("D_OK", time.Second) }, 90 * time.Second, ""},
		{"DurationDefault", func(r *Reader) any { return r.Duration("D_UNSET", time.Second) }, time.Second, ""},
		{"DurationBad", func(r *Reader) any { return r.Duration("D_BAD", time.Second) }, time.Second, "D_BAD: must be a positive Go duration"},
		{"DurationNegative", func(r *Reader) any { return r.Duration("D_NEG", time.Second) }, time.Second, "D_NEG"},
		{"PositiveIntOK", func(r *Reader) any { return r.PositiveInt("I_OK", 1) }, 7, ""},
		{"PositiveIntZero", func(r *Reader) any { return r.PositiveInt("I_BAD", 1) }, 1, "I_BAD: must be a positive integer"},
		{"NonNegativeZero", func(r *Reader) any { return r.NonNegativeInt("N_OK", 5) }, 0, ""},
		{"NonNegativeBad", func(r *Reader) any { return r.NonNegativeInt("N_BAD", 5) }, 5, "N_BAD"},
		{"PortBad", func(r *Reader) any { return r.Port("P_BAD", 80) }, 80, "P_BAD: must be a port number"},
		{"URLOK", func(r *Reader) any { return r.URL("U_OK") }, "http://id.example:8081", ""},
		{"URLBad", func(r *Reader) any { return r.URL("U_BAD") }, "", "U_BAD: must be an absolute http(s) URL"},
		{"KeyOK", func(r *Reader) any { return len(r.Key32("K_OK")) }, 32, ""},
		{"KeyBad", func(r *Reader) any { return len(r.Key32("K_BAD")) }, 0, "K_BAD: must be the base64 encoding of exactly 32 bytes"},
		{"LoopbackOK", func(r *Reader) any { return r.LoopbackAddr("A_OK") }, "127.0.0.1:6060", ""},
		{"LoopbackV6", func(r *Reader) any { return r.LoopbackAddr("A_V6") }, "[::1]:0", ""},
		{"LoopbackUnset", func(r *Reader) any { return r.LoopbackAddr("A_UNSET") }, "", ""},
		{"LoopbackPublic", func(r *Reader) any { return r.LoopbackAddr("A_PUBLIC") }, "", "A_PUBLIC: must be a loopback host:port"},
		{"LoopbackNoPort", func(r *Reader) any { return r.LoopbackAddr("A_NOPORT") }, "", "A_NOPORT"},
		{"LoopbackName", func(r *Reader) any { return r.LoopbackAddr("A_HOST") }, "", "A_HOST"},
		{"Require", func(r *Reader) any { r.Require("MISSING", "always"); return nil }, nil, "MISSING: is required always"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(getenv)
			if got := tt.read(r); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			err := r.Err()
			if tt.wantErr == "" && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), env["K_BAD"]) {
				t.Errorf("the error echoes a secret value")
			}
		})
	}
}
