package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/subarena/subarena/htmlviz"
)

// chromium returns the path of a Chromium binary: SUBARENA_CHROMIUM, or the first of
// chromium, chromium-browser and google-chrome on PATH. Without one the test fails
// under CI=true (CI must run it) and is skipped otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SUBARENA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium: install it (Debian: apt-get install chromium) or set SUBARENA_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    error
)

// browser returns the context of one headless Chromium shared by the tests of this
// package (each test opens its own tab with open).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox, // CI runs as root
			chromedp.DisableGPU,
			chromedp.WindowSize(1400, 900),
			chromedp.Flag("hide-scrollbars", true),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		// Start the browser now, so that the first test's timings do not include it.
		if err := chromedp.Do(ctx); err != nil {
			browserErr = fmt.Errorf("starting %s: %w", path, err)
		}
		browserCtx = ctx
		browserCancel = func() { cancel(); cancelAlloc() }
	})
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	return browserCtx
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browserCancel != nil {
		browserCancel()
	}
	os.Exit(code)
}

// tab is one browser tab on a viewer page, recording console errors and uncaught
// exceptions.
type tab struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// open writes page to a temporary file, opens it in a new tab and waits until its
// first frame is drawn; it returns the tab and how long that took.
func open(t *testing.T, page *htmlviz.Page) (*tab, time.Duration) {
	t.Helper()
	return openFile(t, writePage(t, page, "viewer.html"))
}

// writePage writes page as the file called name in a temporary directory and
// returns its path.
func writePage(t *testing.T, page *htmlviz.Page, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := htmlviz.Write(f, page); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openFile opens the HTML file at path in a new tab, as open does.
func openFile(t *testing.T, path string) (*tab, time.Duration) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t))
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx}
	// Open the tab, then listen to its console before the page loads.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				tb.mu.Lock()
				tb.errors = append(tb.errors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				tb.mu.Unlock()
			}
		}
	}()
	tctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()
	start := time.Now()
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+path),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`))); err != nil {
		tb.checkConsole()
		t.Fatalf("loading %s: %v", path, err)
	}
	took := time.Since(start)
	tb.checkConsole()
	return tb, took
}

// checkConsole fails the test if the page logged an error or threw. Messages arrive
// on another goroutine: it gives them a moment first.
func (tb *tab) checkConsole() {
	tb.t.Helper()
	_ = chromedp.Do(tb.ctx, chromedp.Sleep(50*time.Millisecond))
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.errors) > 0 {
		tb.t.Fatalf("the page reported errors:\n%s", strings.Join(tb.errors, "\n"))
	}
}

// do runs actions in the tab.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in tb's page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// point is a position in the page, in CSS pixels from the viewport's top left.
type point struct{ X, Y float64 }

// locate evaluates expr, a call returning {x, y} or null, and fails on null.
func (tb *tab) locate(expr string) point {
	tb.t.Helper()
	p := eval[*point](tb, expr)
	if p == nil {
		tb.t.Fatalf("%s: nothing there", expr)
	}
	return *p
}

// hover moves the mouse to p and returns the tooltip's text.
func (tb *tab) hover(p point) string {
	tb.t.Helper()
	tb.do(chromedp.MouseEvent(chromedp.MouseMoved, p.X, p.Y))
	return eval[string](tb, `window.subarenaViewer.tooltipText()`)
}

// screenshot writes the tab's viewport as a PNG named name under
// SUBARENA_SCREENSHOT_DIR, or a temporary directory, and returns its path.
func (tb *tab) screenshot(name string) string {
	tb.t.Helper()
	dir := os.Getenv("SUBARENA_SCREENSHOT_DIR")
	if dir == "" {
		dir = tb.t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}
