package parlor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The real-browser helpers of parlor's tests: the journey (build tag
// e2e, against the real binary) and the OpenID sign-in (against the
// in-process stack) drive Chromium through these.

// findBrowser returns the path of a Chromium-family browser. Outside CI a
// machine without one skips the browser tests; in CI (CI=true) that is a
// failure, because the journey must run there.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PARLOR_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no browser found (chromium, chromium-browser, google-chrome or headless-shell); CI must install chromium")
	}
	t.Skip("browser tests skipped: no chromium, chromium-browser, google-chrome or headless-shell on PATH (apt-get install chromium)")
	return ""
}

// browser is one person's browser: its own process and profile, so two
// people never share a cookie.
type browser struct {
	t     *testing.T
	ctx   context.Context
	name  string
	shots string
	// axe is the axe-core script, run on every page a step ends on.
	axe string
	// step numbers the screenshots of every browser of a test in order.
	step *int
	base string
}

func newBrowser(t *testing.T, exe, name, base, shots, axe string, step *int) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return &browser{t: t, ctx: ctx, name: name, shots: shots, base: base, axe: axe, step: step}
}

// do runs actions within a minute, then waits until the page's main
// content shows every one of wants, and saves a screenshot of the step.
func (b *browser) do(step string, wants []string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s, %s: %v\n%s", b.name, step, err, b.mainText())
	}
	// The wanted text may already be on the page an action is about to
	// replace; a navigation that lands while axe-core runs is waited out
	// and the page checked again.
	for attempt := 1; ; attempt++ {
		for _, want := range wants {
			if !b.waitText(ctx, want) {
				b.shot(step + "-failed")
				b.t.Fatalf("%s, %s: the page does not show %q:\n%s", b.name, step, want, b.mainText())
			}
		}
		err := b.checkAccessibility(ctx, step)
		if err == nil {
			break
		}
		if attempt == 3 || !navigatedAway(err) {
			b.t.Fatalf("%s, %s: %v", b.name, step, err)
		}
	}
	b.shot(step)
}

// navigatedAway reports whether err is DevTools saying the page it
// evaluated in was replaced.
func navigatedAway(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "context was destroyed") ||
		strings.Contains(msg, "Cannot find context")
}

// axeViolation is what the test reports of one axe-core finding.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAccessibility runs axe-core on the page: no serious or critical
// violation may be found. The script is evaluated through DevTools, which
// the page's Content-Security-Policy does not govern.
// A failure to run axe-core at all is returned.
func (b *browser) checkAccessibility(ctx context.Context, step string) error {
	b.t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](b.axe+";undefined")); err != nil {
		return fmt.Errorf("load axe-core: %w", err)
	}
	const run = `axe.run(document).then(r => ({passes: r.passes.length, violations: r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))}))}))`
	type result struct {
		Passes     int            `json:"passes"`
		Violations []axeViolation `json:"violations"`
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[result](run, chromedp.EvalAwaitPromise))
	if err != nil {
		return fmt.Errorf("run axe-core: %w", err)
	}
	if found.Passes == 0 {
		b.t.Errorf("%s, %s: axe-core checked nothing on the page", b.name, step)
	}
	for _, v := range found.Violations {
		b.t.Errorf("%s, %s (%s): accessibility %s violation %s: %s at %v", b.name, step, b.location(), v.Impact, v.ID, v.Help, v.Nodes)
	}
	return nil
}

// waitText polls the page until its main content shows want, for up to
// 15 seconds. A page being replaced by a navigation is polled again.
func (b *browser) waitText(ctx context.Context, want string) bool {
	q, _ := json.Marshal(want)
	expr := fmt.Sprintf(`document.readyState === "complete" && document.querySelector("main") !== null && document.querySelector("main").innerText.includes(%s)`, q)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func (b *browser) shot(step string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot of %s: %v", step, err)
		return
	}
	*b.step++
	name := fmt.Sprintf("%02d-%s-%s.png", *b.step, b.name, step)
	if err := os.WriteFile(filepath.Join(b.shots, name), png, 0o644); err != nil {
		b.t.Errorf("save screenshot: %v", err)
	}
}

func (b *browser) mainText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	return s
}

func (b *browser) location() string {
	u, _ := chromedp.Run(b.ctx, chromedp.Location())
	return u
}
