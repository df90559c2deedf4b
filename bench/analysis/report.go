package analysis

import (
	"fmt"
	"io"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace"
)

// PrintBreakdown replays in under mode and fit with a Breakdown observer and
// prints the snapshot at the placement that set the high-water mark, and the
// growth-weighted breakdown over every placement that raised it.
func PrintBreakdown(w io.Writer, name string, in *Info, opts Options) error {
	bd := &Breakdown{Every: true}
	opts.Observer = bd
	mode, fit := opts.Mode, opts.Fit
	res, _, err := Run(in, opts)
	if err != nil {
		return err
	}
	pk, ok := bd.Peak()
	if !ok {
		return fmt.Errorf("%s: no growth", name)
	}
	mib := func(v int64) string { return fmt.Sprintf("%7.2f", float64(v)/(1<<20)) }
	pl := "allocator"
	if opts.Placer != nil {
		pl = opts.Placer.Name()
	}
	fmt.Fprintf(w, "== %s (%v, %v, %s, completions %v): HWM %s MiB, LiveLB %s MiB, HWM/LiveLB %.3f, excess %s MiB\n", name, mode, fit, pl, opts.Completions,
		mib(res.HWM), mib(res.LiveLB), res.Ratio, mib(res.HWM-res.LiveLB))
	fmt.Fprintf(w, "   peak set at step %d by buffer %q (%s MiB), host t=%d, t*=%d (horizon %d); live@t* %s MiB (LiveLB - live@t* = %s MiB); unsafe-but-live %s MiB\n",
		pk.Step, in.P.Buffers[pk.Buffer].Name, mib(in.P.Buffers[pk.Buffer].Size), pk.Host, pk.TStar, in.Horizon[pk.Step],
		mib(pk.Bytes[Live]), mib(res.LiveLB-pk.Bytes[Live]), mib(pk.UnsafeLive))
	notLive := pk.HWM - pk.Bytes[Live]
	// Growth-weighted: each placement that raised the mark, weighted by the bytes it added.
	var gw [numCategories]float64
	var gsum float64
	for _, sn := range bd.Growth {
		nl := float64(sn.HWM - sn.Bytes[Live])
		if nl <= 0 {
			continue
		}
		for c := Frag; c < numCategories; c++ {
			gw[c] += float64(sn.Grew) * float64(sn.Bytes[c]) / nl
		}
		gsum += float64(sn.Grew)
	}
	// Time average over every placement, as a share of the arena then.
	var ta [numCategories]float64
	for _, sn := range bd.All {
		for c := range numCategories {
			ta[c] += float64(sn.Bytes[c]) / float64(sn.HWM)
		}
	}
	fmt.Fprintf(w, "   %-14s %10s %8s %12s %12s\n", "category", "MiB@peak", "%notlive", "%growth-wtd", "%arena(avg)")
	for c := range numCategories {
		pct := 0.0
		if c != Live && notLive > 0 {
			pct = 100 * float64(pk.Bytes[c]) / float64(notLive)
		}
		g := 0.0
		if c != Live && gsum > 0 {
			g = 100 * gw[c] / gsum
		}
		fmt.Fprintf(w, "   %-14s %10s %8.1f %12.1f %12.1f\n", c, mib(pk.Bytes[c]), pct, g, 100*ta[c]/float64(len(bd.All)))
	}
	return nil
}

// Host is a host-program variant of a workload.
type Host struct {
	Name string
	In   *Info
}

// HostVariants returns the workload as given and the host programs the
// analysis compares: completions polled or waited for (HostVariant), each
// buffer released after its last use (EarlyRelease), and both.
func HostVariants(in *Info) ([]Host, error) {
	out := []Host{{"as-is", in}}
	add := func(name string, t *trace.Trace) error {
		p, err := t.Resolve()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		v, err := NewInfo(p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, Host{name, v})
		return nil
	}
	if err := add("poll", HostVariant(in, Poll)); err != nil {
		return nil, err
	}
	if err := add("stall", HostVariant(in, Stall)); err != nil {
		return nil, err
	}
	if err := add("early-release", EarlyRelease(in)); err != nil {
		return nil, err
	}
	er := out[len(out)-1].In
	if err := add("early+stall", HostVariant(er, Stall)); err != nil {
		return nil, err
	}
	return out, nil
}

// NamedPlacer is a placement policy for Run (nil Placer: the Allocator's).
type NamedPlacer struct {
	Name string
	Fit  arena.Fit
	New  func(in *Info) Placer
}

// Placers returns the placement policies PrintIdeas compares.
func Placers() []NamedPlacer {
	return []NamedPlacer{
		{"allocator (lean)", arena.FitLean, nil},
		{"allocator (fast)", arena.FitFast, nil},
		{"low-address", 0, func(*Info) Placer { return LowAddr() }},
		{"best-fit-held", 0, func(*Info) Placer { return BestFitHeld() }},
		{"best-fit", 0, func(*Info) Placer { return BestFit() }},
		{"death-neighbour", 0, func(in *Info) Placer { return DeathNeighbor(in) }},
		{"two-ended", 0, func(in *Info) Placer { return TwoEnded(in) }},
	}
}

// PrintIdeas prints, per workload, HWM/LiveLB for every host variant ×
// placement policy under subrange-fenced (whole-fenced in parentheses, "!"
// where subrange-fenced needs more), and each host variant's ordered lower
// bound (OrderedLowerBound / LiveLB).
func PrintIdeas(w io.Writer, names []string, infos []*Info, placers []NamedPlacer) error {
	for wi, in0 := range infos {
		hosts, err := HostVariants(in0)
		if err != nil {
			return fmt.Errorf("%s: %w", names[wi], err)
		}
		fmt.Fprintf(w, "== %s: LiveLB %d B; HWM/LiveLB subrange-fenced (whole-fenced)\n", names[wi], in0.LiveLB)
		fmt.Fprintf(w, "%-20s", "placement \\ host")
		for _, h := range hosts {
			fmt.Fprintf(w, " %18s", h.Name)
		}
		fmt.Fprintf(w, "\n%-20s", "ordered bound")
		for _, h := range hosts {
			olb, _ := OrderedLowerBound(h.In)
			fmt.Fprintf(w, " %18.3f", float64(olb)/float64(h.In.LiveLB))
		}
		fmt.Fprintln(w)
		for _, pl := range placers {
			fmt.Fprintf(w, "%-20s", pl.Name)
			for _, h := range hosts {
				var r [2]float64
				for k, whole := range []bool{false, true} {
					o := Options{Mode: PolicyMode(whole), Fit: pl.Fit}
					if pl.New != nil {
						o.Placer = pl.New(h.In)
					}
					res, _, err := Run(h.In, o)
					if err != nil {
						return fmt.Errorf("%s %s %s: %w", names[wi], h.Name, pl.Name, err)
					}
					r[k] = float64(res.HWM) / float64(in0.LiveLB)
				}
				mark := " "
				if r[0] > r[1] {
					mark = "!"
				}
				fmt.Fprintf(w, "    %6.3f (%6.3f)%s", r[0], r[1], mark)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}
