//go:build e2e

package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/testutil"
)

// TestReadmeWalk starts `platform dev` and runs, with bash, exactly the
// commands between the walk markers of README.md.
func TestReadmeWalk(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walk needs %s", tool)
		}
	}
	for _, port := range []string{"8080", "8081", "8082", "8083", "8084", "8085", "8086"} {
		ln, err := net.Listen("tcp", ":"+port)
		if err != nil {
			t.Skipf("port %s is taken (a platform dev already running?): %v", port, err)
		}
		ln.Close()
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script := walkScript(t, string(readme))

	bin := e2e.Binary(t)
	dir := t.TempDir()
	// The walk publishes platform.tar: the image tarball a release
	// pipeline would build (docker save), here a small random one.
	unit := writeImageTarball(t, filepath.Join(dir, "platform.tar"))
	// The walk uploads logo.png to darkroom.
	writeLogo(t, filepath.Join(dir, "logo.png"))
	dev, devOut := startDev(t, bin, dir)
	if !strings.Contains(devOut.String(), "identity staff add") {
		t.Errorf("the banner does not say how to make a user staff:\n%s", devOut.String())
	}

	// `go run ./cmd/platform …` in the walk runs the binary under test.
	prelude := `go() { if [ "$1" = run ] && [ "$2" = ./cmd/platform ]; then shift 2; "` + bin + `" "$@"; else command go "$@"; fi; }` + "\n"
	walk := exec.Command("bash", "-euo", "pipefail", "-c", prelude+script)
	walk.Dir = dir
	out, err := walk.CombinedOutput()
	if err != nil {
		t.Fatalf("the README walk failed: %v\n%s\n--- platform dev ---\n%s", err, out, devOut)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; last != unit {
		t.Errorf("the pull through the gateway got the manifest %q, want the published %s\n%s", last, unit, out)
	}
	for _, want := range []string{`"secret":"whsec_`, "published release platform 1.2.3", "api key fetch: platform", "found: widget-cli",
		`{"product":"platform","version_range":`, "valid: platform", "card variant: image/webp", "Hello, muse"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk's output lacks %q:\n%s", want, out)
		}
	}
	key, err := os.ReadFile(filepath.Join(dir, "data", "master.key"))
	if err != nil {
		t.Fatalf("master key not in ./data: %v", err)
	}

	// Ctrl-C stops everything cleanly; a second start reuses the data.
	stopDev(t, dev)
	if code := dev.ProcessState.ExitCode(); code != 0 {
		t.Errorf("platform dev exited %d after Ctrl-C, want 0\n%s", code, devOut.String())
	}
	dev, _ = startDev(t, bin, dir)
	defer stopDev(t, dev)
	e2e.Client{Base: "http://127.0.0.1:8080"}.Do(t, "POST", "/v1/session",
		map[string]string{"email": "alice@example.com", "password": "correct horse battery"}).Expect(t, 201)
	again, _ := os.ReadFile(filepath.Join(dir, "data", "master.key"))
	if !bytes.Equal(key, again) {
		t.Errorf("the master key changed on the second start")
	}
}

func startDev(t *testing.T, bin, dir string) (*exec.Cmd, *logtest.Buffer) {
	t.Helper()
	dev := exec.Command(bin, "dev")
	dev.Dir = dir
	out := &logtest.Buffer{}
	dev.Stdout, dev.Stderr = out, out
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDev(t, dev) })
	testutil.Eventually(t, 30*time.Second, "platform dev to be ready", func() bool {
		return strings.Contains(out.String(), "platform dev is running") &&
			(e2e.Client{Base: "http://127.0.0.1:8080"}).Do(t, "GET", "/readyz", nil).Status == 200
	})
	return dev, out
}

func stopDev(t *testing.T, dev *exec.Cmd) {
	if dev.ProcessState != nil {
		return
	}
	_ = dev.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = dev.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = dev.Process.Kill()
		<-done
		t.Errorf("platform dev did not stop on Ctrl-C")
	}
}

// writeLogo writes a 640x360 PNG at path.
func writeLogo(t *testing.T, path string) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 640, 360))
	for y := range 360 {
		for x := range 640 {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 128, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeImageTarball writes a small random image as a tarball at path and
// returns its manifest digest.
func writeImageTarball(t *testing.T, path string) string {
	t.Helper()
	img, err := random.Image(2048, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("platform:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// walkScript returns the shell code blocks between the walk markers.
func walkScript(t *testing.T, readme string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "<!-- walk:begin -->")
	body, _, ok2 := strings.Cut(rest, "<!-- walk:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no walk markers")
	}
	var script strings.Builder
	inCode := false
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inCode = !inCode
		case inCode:
			script.WriteString(line + "\n")
		}
	}
	return script.String()
}
