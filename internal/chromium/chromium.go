// Package chromium starts a real headless Chromium for tests, driven with
// chromedp. The browser is the system's (Debian's `chromium` package, which
// .ci/run installs); when it is missing a test is skipped — or fails when the
// environment variable CI is set, as with DynamoDB Local.
//
// The flags keep the browser off the network: on a closed network Chromium's
// background services (component updates, sync, QUIC probes) otherwise have
// their connections refused many at a time, which slows and confuses it.
package chromium

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path finds the browser: $HITCH_CHROMIUM, else chromium, chromium-browser
// or google-chrome on the PATH.
func Path() (string, error) {
	if p := os.Getenv("HITCH_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	var err error
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		var p string
		if p, err = exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", err
}

// New starts a headless Chromium with a fresh profile and returns a chromedp
// context for one tab. The browser ends with the test.
func New(tb testing.TB, width, height int) context.Context {
	tb.Helper()
	path, err := Path()
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("chromium: no browser found (%v); install Debian's chromium package (apt-get install -y chromium)", err)
		}
		tb.Skipf("chromium: no browser found (%v); install it with apt-get install -y chromium, or set HITCH_CHROMIUM", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(tb.Logf))
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, so that a browser that cannot start fails here.
	if err := chromedp.Do(ctx); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("chromium: %s did not start: %v", path, err)
		}
		tb.Skipf("chromium: %s did not start: %v", path, err)
	}
	return ctx
}

// ArtifactDir is where tests keep screenshots: $HITCH_SCREENSHOTS (created if
// needed), else a temporary directory of the test.
func ArtifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("HITCH_SCREENSHOTS")
	if dir == "" {
		return tb.TempDir()
	}
	dir = filepath.Join(dir, strings.ReplaceAll(tb.Name(), "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("chromium: artifacts: %v", err)
	}
	return dir
}

// Screenshot saves a full-page PNG of the tab as dir/name.png and returns
// its path.
func Screenshot(ctx context.Context, tb testing.TB, dir, name string) string {
	tb.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.Fatalf("chromium: screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.Fatalf("chromium: screenshot %s: %v", name, err)
	}
	return p
}
