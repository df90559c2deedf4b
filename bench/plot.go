package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	subarena "github.com/subarena/subarena"
)

// policyColor is the colour every chart gives a policy.
func policyColor(p subarena.Policy) color.RGBA {
	switch {
	case !p.Safe():
		return color.RGBA{R: 0x9e, G: 0x9e, B: 0x9e, A: 0xff} // grey: unsafe baseline
	case p.Whole() && !p.Fenced():
		return color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
	case p.Whole():
		return color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff} // orange
	case !p.Fenced():
		return color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	default:
		return color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff} // green: subrange, fenced
	}
}

// WritePeakSVG draws the matrix as an SVG chart of peak against
// fragmentation: for every workload, one bar per policy of the peak
// normalized by the lower bound (HWM / LiveLB, 1 is perfect) above one bar
// per policy of the external fragmentation at that peak. Bars use the
// cells of fit (the arena strategy; "lean" is the default); a policy
// without a cell for a workload is left out.
func (m *Matrix) WritePeakSVG(w io.Writer, fit string) error {
	if len(m.Workloads) == 0 {
		return fmt.Errorf("%w: empty matrix", ErrInvalidWorkload)
	}
	names := make([]string, len(m.Workloads))
	for i, wl := range m.Workloads {
		names[i] = wl.Name
	}
	peak := plot.New()
	peak.Title.Text = fmt.Sprintf("Arena high-water mark / LiveLB (fit %s; 1 = the lower bound)", fit)
	peak.Y.Label.Text = "HWM / LiveLB"
	peak.Y.Min = 0
	frag := plot.New()
	frag.Title.Text = "External fragmentation at the peak (1 − largest free / total free; no bar: no free byte below it)"
	frag.Y.Label.Text = "fragmentation"
	frag.Y.Min, frag.Y.Max = 0, 1
	policies := subarena.Policies()
	const barWidth = 9
	top := 1.0
	for i, pol := range policies {
		pv := make(plotter.Values, len(names))
		fv := make(plotter.Values, len(names))
		for j, wl := range names {
			if c, ok := m.Find(wl, pol.String(), fit); ok && c.LiveLB > 0 {
				pv[j] = float64(c.HWM) / float64(c.LiveLB)
				top = max(top, pv[j])
				if !math.IsNaN(c.Fragmentation) {
					fv[j] = c.Fragmentation
				}
			}
		}
		off := vg.Points(barWidth * (float64(i) - float64(len(policies)-1)/2))
		for _, target := range []struct {
			p *plot.Plot
			v plotter.Values
		}{{peak, pv}, {frag, fv}} {
			bars, err := plotter.NewBarChart(target.v, vg.Points(barWidth))
			if err != nil {
				return err
			}
			bars.Color = policyColor(pol)
			bars.LineStyle.Width = 0
			bars.Offset = off
			target.p.Add(bars)
			if target.p == peak {
				peak.Legend.Add(pol.String(), bars)
			}
		}
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	peak.Add(one)
	peak.Legend.Top = true
	peak.Legend.Left = true // text after the swatches: a wider fallback font cannot run into them
	peak.Y.Max = 1.45 * top // room for the legend above the bars
	peak.NominalX(names...)
	frag.NominalX(names...)
	width, height := vg.Points(820), vg.Points(620)
	canvas := vgsvg.New(width, height)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6),
		PadRight: vg.Points(10), PadY: vg.Points(14)}
	cells := plot.Align([][]*plot.Plot{{peak}, {frag}}, tiles, draw.New(canvas))
	peak.Draw(cells[0][0])
	frag.Draw(cells[1][0])
	_, err := canvas.WriteTo(w)
	return err
}
