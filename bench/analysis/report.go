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
	if opts.PredictWait != PredictNone {
		pl += ", wait-fence " + opts.PredictWait.String()
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
		{"size-two-ended", 0, func(in *Info) Placer { return SizeTwoEnded(0.25) }},
		{"engine-affinity", 0, func(in *Info) Placer { return EngineAffinity(in) }},
	}
}

// Idea is one candidate change: a host variant, a placement policy and the
// driver's options.
type Idea struct {
	Name   string
	Host   string // "" or a HostVariants name
	Placer *NamedPlacer
	Comp   Completions
	Pred   Predict
	Spread float64 // PredictEstimate's cost spread
	// OnGrowth: predictions only for allocs that would raise the mark.
	OnGrowth bool
	// Match is Options.WaitMatch.
	Match float64
}

// Ideas returns the candidate changes PrintIdeas evaluates.
func Ideas() []Idea {
	pl := Placers()
	byName := func(n string) *NamedPlacer {
		for i := range pl {
			if pl[i].Name == n {
				return &pl[i]
			}
		}
		panic(n)
	}
	lean, fast := byName("allocator (lean)"), byName("allocator (fast)")
	bfh, bf, dn, te, low := byName("best-fit-held"), byName("best-fit"), byName("death-neighbour"), byName("two-ended"), byName("low-address")
	ste, ea := byName("size-two-ended"), byName("engine-affinity")
	return []Idea{
		{Name: "allocator (lean)", Placer: lean},
		{Name: "allocator (fast)", Placer: fast},
		{Name: "low-address", Placer: low},
		{Name: "best-fit-held", Placer: bfh},
		{Name: "best-fit", Placer: bf},
		{Name: "death-neighbour", Placer: dn},
		{Name: "two-ended", Placer: te},
		{Name: "size-two-ended", Placer: ste},
		{Name: "engine-affinity", Placer: ea},
		{Name: "host polls", Host: "poll", Placer: lean},
		{Name: "host stalls on growth", Placer: lean, Comp: StallOnGrow},
		{Name: "host stalls", Host: "stall", Placer: lean},
		{Name: "early release", Host: "early-release", Placer: lean},
		{Name: "wait-fence (schedule)", Placer: lean, Pred: PredictSchedule},
		{Name: "wait-fence (est. ±30%)", Placer: lean, Pred: PredictEstimate, Spread: 0.3},
		{Name: "wait-fence (est. ±60%)", Placer: lean, Pred: PredictEstimate, Spread: 0.6},
		{Name: "wait-fence (any)", Placer: lean, Pred: PredictAny},
		{Name: "wait-fence size-matched", Placer: lean, Pred: PredictSchedule, Match: 1.5},
		{Name: "wait-fence matched ±30%", Placer: lean, Pred: PredictEstimate, Spread: 0.3, Match: 1.5},
		{Name: "wait-fence on growth", Placer: lean, Pred: PredictSchedule, OnGrowth: true},
		{Name: "wait-fence on growth ±30%", Placer: lean, Pred: PredictEstimate, Spread: 0.3, OnGrowth: true},
		{Name: "wait-fence + polls", Host: "poll", Placer: lean, Pred: PredictSchedule},
		{Name: "wait-fence + best-fit-held", Placer: bfh, Pred: PredictSchedule},
		{Name: "wait-fence + best-fit", Placer: bf, Pred: PredictSchedule},
		{Name: "wait-fence + death-nb", Placer: dn, Pred: PredictSchedule},
		{Name: "wait-fence + two-ended", Placer: te, Pred: PredictSchedule},
		{Name: "wait-fence + size-2-ended", Placer: ste, Pred: PredictSchedule},
		{Name: "wait-fence + engine-aff.", Placer: ea, Pred: PredictSchedule},
		{Name: "stalls + best-fit-held", Host: "stall", Placer: bfh},
		{Name: "stalls + death-nb", Host: "stall", Placer: dn},
		{Name: "early + stalls + death-nb", Host: "early+stall", Placer: dn},
	}
}

// IdeaResult is one idea on one workload under one policy.
type IdeaResult struct {
	Ratio    float64 // HWM / LiveLB of the original schedule
	Makespan float64 // makespan / original makespan
}

// RunIdea evaluates id on the host variants of a workload.
func RunIdea(hosts []Host, id Idea, whole bool) (IdeaResult, error) {
	in := hosts[0].In
	if id.Host != "" {
		for _, h := range hosts {
			if h.Name == id.Host {
				in = h.In
			}
		}
	}
	o := Options{Mode: PolicyMode(whole), Fit: id.Placer.Fit, Completions: id.Comp, PredictWait: id.Pred,
		PredictOnGrowth: id.OnGrowth, WaitMatch: id.Match}
	if id.Placer.New != nil {
		o.Placer = id.Placer.New(in)
	}
	if id.Pred == PredictEstimate {
		est, err := Estimated(in, id.Spread, 7)
		if err != nil {
			return IdeaResult{}, err
		}
		o.Estimate = est
	}
	res, _, err := Run(in, o)
	if err != nil {
		return IdeaResult{}, err
	}
	return IdeaResult{Ratio: float64(res.HWM) / float64(hosts[0].In.LiveLB),
		Makespan: float64(res.Makespan) / float64(hosts[0].In.Makespan)}, nil
}

// PrintIdeas prints HWM/LiveLB of every idea on every workload under
// subrange-fenced (whole-fenced in parentheses, "!" where subrange-fenced
// needs more; "+x%" where the idea lengthened the schedule), with the
// ordered lower bound of the workload as given.
func PrintIdeas(w io.Writer, names []string, infos []*Info, ideas []Idea) error {
	hosts := make([][]Host, len(infos))
	fmt.Fprintf(w, "%-28s", "HWM/LiveLB sub (whole)")
	for i, in := range infos {
		h, err := HostVariants(in)
		if err != nil {
			return err
		}
		hosts[i] = h
		fmt.Fprintf(w, " %24s", names[i])
	}
	fmt.Fprintf(w, "\n%-28s", "ordered lower bound")
	for _, in := range infos {
		olb, _ := OrderedLowerBound(in)
		fmt.Fprintf(w, " %24.3f", float64(olb)/float64(in.LiveLB))
	}
	fmt.Fprintln(w)
	for _, id := range ideas {
		fmt.Fprintf(w, "%-28s", id.Name)
		for i := range infos {
			var r [2]IdeaResult
			for k, whole := range []bool{false, true} {
				res, err := RunIdea(hosts[i], id, whole)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", id.Name, names[i], err)
				}
				r[k] = res
			}
			mark := " "
			if r[0].Ratio > r[1].Ratio {
				mark = "!"
			}
			ms := ""
			if m := max(r[0].Makespan, r[1].Makespan); m > 1.0005 {
				ms = fmt.Sprintf("+%.0f%%", 100*(m-1))
			}
			fmt.Fprintf(w, " %5s %6.3f (%6.3f)%s", ms, r[0].Ratio, r[1].Ratio, mark)
		}
		fmt.Fprintln(w)
	}
	return nil
}
