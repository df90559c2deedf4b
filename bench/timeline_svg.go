package bench

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math"

	"github.com/subarena/subarena/internal/checked"
)

// Layout of the timeline picture, in SVG user units.
const (
	svgWidth   = 1200.0
	svgHeight  = 640.0
	svgLeft    = 90.0 // room for the offset axis labels
	svgRight   = 20.0
	svgTop     = 40.0
	svgBottom  = 50.0
	svgMaxRect = 200000 // segments drawn at most; beyond, the picture says so
)

// WriteSVG draws the timeline as a static SVG picture in the manner of
// PyTorch's memory viewer: x is the host step, y the arena offset (0 at
// the bottom), one rectangle per segment coloured by buffer (each buffer
// keeps one colour), pending bytes hatched over a pale fill, the running
// high-water mark as a red step line and its final value as a dashed line.
// A buffer a plan lays over a footprint of its host (Segment.Host) is drawn
// at that footprint's runs with a dashed dark outline. Hovering a rectangle
// shows its buffer (and host) and byte range.
func (t *Timeline) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	steps := max(t.Steps, 1)
	top := max(t.HWM, 1)
	plotW := svgWidth - svgLeft - svgRight
	plotH := svgHeight - svgTop - svgBottom
	x := func(step int) float64 { return svgLeft + plotW*float64(step)/float64(steps) }
	y := func(off int64) float64 { return svgTop + plotH*(1-float64(off)/float64(top)) }
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">
<defs><pattern id="pending" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">
<rect width="6" height="6" fill="#ffffff" fill-opacity="0.55"/><line x1="0" y1="0" x2="0" y2="6" stroke="#000000" stroke-width="1.6" stroke-opacity="0.55"/></pattern></defs>
<rect width="100%%" height="100%%" fill="#ffffff"/>
<text x="%.0f" y="22" font-size="15">%s</text>
`, svgWidth, svgHeight, svgWidth, svgHeight, svgLeft,
		checked.XML(fmt.Sprintf("memory timeline: %s under %s (HWM %s)", t.Trace, t.Policy, formatBytes(t.HWM))))
	// Axes and grid.
	fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f7f7f7" stroke="#444444"/>`+"\n",
		svgLeft, svgTop, plotW, plotH)
	for i := 0; i <= 5; i++ {
		off := top * int64(i) / 5
		fmt.Fprintf(bw, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#dddddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			svgLeft, svgLeft+plotW, y(off), y(off), svgLeft-6, y(off)+4, checked.XML(formatBytes(off)))
		st := steps * i / 5
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(st), svgTop+plotH+18, st)
	}
	fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle">host step (program order)</text>`+"\n",
		svgLeft+plotW/2, svgHeight-10)
	fmt.Fprintf(bw, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">arena offset</text>`+"\n",
		svgTop+plotH/2)
	// Live segments first, pending ones on top.
	drawn, placements := 0, false
	for pass := 0; pass < 2; pass++ {
		for _, s := range t.Segments {
			if s.Pending != (pass == 1) || s.To <= s.From || s.Hi <= s.Lo {
				continue
			}
			if drawn == svgMaxRect {
				break
			}
			drawn++
			placements = placements || s.Host != ""
			x0, x1 := x(s.From), x(s.To)
			y0, y1 := y(s.Hi), y(s.Lo)
			col := bufferColor(s.Buffer)
			name := s.Buffer
			if s.Host != "" {
				name += " over " + s.Host
			}
			title := checked.XML(fmt.Sprintf("%s [%d, %d) steps [%d, %d)", name, s.Lo, s.Hi, s.From, s.To))
			if s.Pending {
				fmt.Fprintf(bw, `<g><title>%s (pending)</title><rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" fill-opacity="0.45"/><rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="url(#pending)"/></g>`+"\n",
					title, x0, y0, math.Max(x1-x0, 0.3), math.Max(y1-y0, 0.3), col, x0, y0, math.Max(x1-x0, 0.3), math.Max(y1-y0, 0.3))
			} else {
				fmt.Fprintf(bw, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"%s><title>%s</title></rect>`+"\n",
					x0, y0, math.Max(x1-x0, 0.3), math.Max(y1-y0, 0.3), col, placedStroke(s), title)
			}
		}
	}
	// The running high-water mark and its final value.
	if len(t.HighWater) > 0 {
		fmt.Fprint(bw, `<polyline fill="none" stroke="#d62728" stroke-width="1.5" points="`)
		prev := int64(-1)
		for i, h := range t.HighWater {
			if h != prev {
				if prev >= 0 {
					fmt.Fprintf(bw, "%.2f,%.2f ", x(i), y(prev))
				}
				fmt.Fprintf(bw, "%.2f,%.2f ", x(i), y(h))
				prev = h
			}
		}
		fmt.Fprintf(bw, "%.2f,%.2f\"/>\n", x(steps), y(prev))
	}
	fmt.Fprintf(bw, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="6 4"/><text x="%.1f" y="%.1f" text-anchor="end" fill="#d62728">high-water mark %s</text>`+"\n",
		svgLeft, svgLeft+plotW, y(t.HWM), y(t.HWM), svgLeft+plotW-4, y(t.HWM)-5, checked.XML(formatBytes(t.HWM)))
	// Legend.
	fmt.Fprintf(bw, `<rect x="%.1f" y="10" width="14" height="14" fill="#8fbcd4"/><text x="%.1f" y="22">live (one colour per buffer)</text>`+"\n",
		svgWidth-430, svgWidth-410)
	fmt.Fprintf(bw, `<rect x="%.1f" y="10" width="14" height="14" fill="#8fbcd4" fill-opacity="0.45"/><rect x="%.1f" y="10" width="14" height="14" fill="url(#pending)"/><text x="%.1f" y="22">let go, users pending</text>`+"\n",
		svgWidth-220, svgWidth-220, svgWidth-200)
	if placements {
		fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="14" height="14" fill="#8fbcd4"%s/><text x="%.1f" y="%.1f">laid over its host (placement)</text>`+"\n",
			svgLeft, svgHeight-24, placedStroke(Segment{Host: "host"}), svgLeft+20, svgHeight-12)
	}
	if drawn == svgMaxRect {
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" fill="#d62728">(only the first %d segments are drawn)</text>`+"\n", svgLeft+4, svgTop+14, svgMaxRect)
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// placedStroke is the outline of a live segment of a buffer laid over a
// footprint of its host: dashed and dark, so the footprint's runs read as
// one buffer inside another's range.
func placedStroke(s Segment) string {
	if s.Host == "" {
		return ""
	}
	return ` stroke="#222222" stroke-width="0.8" stroke-dasharray="3 2"`
}

// bufferColor gives every buffer name a stable, mid-light colour.
func bufferColor(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	hue := float64(v%360) / 360
	sat := 0.45 + float64((v>>9)%25)/100
	light := 0.55 + float64((v>>17)%15)/100
	r, g, b := hslToRGB(hue, sat, light)
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
}

func hslToRGB(h, s, l float64) (uint8, uint8, uint8) {
	q := l * (1 + s)
	if l >= 0.5 {
		q = l + s - l*s
	}
	p := 2*l - q
	conv := func(t float64) uint8 {
		t -= math.Floor(t)
		var v float64
		switch {
		case t < 1.0/6:
			v = p + (q-p)*6*t
		case t < 0.5:
			v = q
		case t < 2.0/3:
			v = p + (q-p)*(2.0/3-t)*6
		default:
			v = p
		}
		return uint8(math.Round(255 * v))
	}
	return conv(h + 1.0/3), conv(h), conv(h - 1.0/3)
}
