// Package stripemock starts stripe-mock (github.com/stripe/stripe-mock,
// v0.203.0, installed by .ci/run with `go install`) on loopback for the
// tests and benchmarks of billing's Stripe adapter. Without the binary a
// test skips locally and fails under CI=true.
package stripemock

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Version is the stripe-mock release the tests are written against.
const Version = "v0.203.0"

// find returns stripe-mock's path: $STRIPE_MOCK, PATH, then GOBIN or
// GOPATH/bin, where `go install` puts it.
func find() string {
	if p := os.Getenv("STRIPE_MOCK"); p != "" {
		return p
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	dirs := []string{os.Getenv("GOBIN")}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "stripe-mock")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// Start runs stripe-mock on a free loopback port until the test ends and
// returns its base URL.
func Start(tb testing.TB) string {
	tb.Helper()
	bin := find()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("stripe-mock not found; CI must install it: go install github.com/stripe/stripe-mock@" + Version)
		}
		tb.Skip("stripe-mock not installed (go install github.com/stripe/stripe-mock@" + Version + "): the Stripe adapter is not tested")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-http-addr", addr)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start stripe-mock: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case err := <-exited:
			tb.Fatalf("stripe-mock exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatal("stripe-mock did not listen within 30s")
		}
	}
}
