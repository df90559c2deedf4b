// Package browser tests subarena's interactive memory viewer (package htmlviz, pages
// built by bench.ViewerPage, as `subarena viz --html` writes them) in a real browser:
// headless Chromium driven over the DevTools protocol by chromedp.
//
// It is a module of its own so that the root module keeps its small dependency set.
// The tests need a Chromium binary: SUBARENA_CHROMIUM names one, else chromium,
// chromium-browser or google-chrome is looked up on PATH (Debian: apt-get install
// chromium). Without one they fail when CI=true and are skipped otherwise.
//
// What they check: each page loads with no console error or uncaught exception; the
// number of pieces the page reports equals the number of pieces of the timeline it was
// built from; hovering a pending piece shows the op pinning it, its view chain to the
// buffer and the fence; the search box selects a buffer; zooming and panning move the
// window; an ir-order run shows its violation with the reader's view chain and the
// missing edge; a ggml dump and a plan with placements load. A screenshot is written
// under SUBARENA_SCREENSHOT_DIR (else a temporary directory) and its path logged, and
// the time a 10^4-buffer trace takes to load and draw is reported (never asserted).
package browser
