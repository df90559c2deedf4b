package analysis

import (
	"fmt"
	"io"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace"
)

// PrintBreakdown replays in under mode and fit with a breakdown observer and
// prints the snapshot at the placement that set the high-water mark, and the
// growth-weighted breakdown over every placement that raised it.
func PrintBreakdown(w io.Writer, name string, in *Info, opts Options) error {
	bd := &breakdown{Every: true}
	opts.observer = bd
	mode, fit := opts.Mode, opts.Fit
	res, _, err := run(in, opts)
	if err != nil {
		return err
	}
	pk, ok := bd.Peak()
	if !ok {
		return fmt.Errorf("%s: no growth", name)
	}
	mib := func(v int64) string { return fmt.Sprintf("%7.2f", float64(v)/(1<<20)) }
	pl := "allocator"
	if opts.placer != nil {
		pl = opts.placer.Name()
	}
	if opts.PredictWait != PredictNone {
		pl += ", wait-fence " + opts.PredictWait.String()
	}
	fmt.Fprintf(w, "== %s (%v, %v, %s, completions %v): HWM %s MiB, LiveLB %s MiB, HWM/LiveLB %.3f, excess %s MiB\n", name, mode, fit, pl, opts.Completions,
		mib(res.HWM), mib(res.LiveLB), res.Ratio, mib(res.HWM-res.LiveLB))
	fmt.Fprintf(w, "   peak set at step %d by buffer %q (%s MiB), host t=%d, t*=%d (horizon %d); live@t* %s MiB (LiveLB - live@t* = %s MiB); unsafe-but-live %s MiB\n",
		pk.Step, in.P.Buffers[pk.Buffer].Name, mib(in.P.Buffers[pk.Buffer].Size), pk.Host, pk.TStar, in.Horizon[pk.Step],
		mib(pk.Bytes[catLive]), mib(res.LiveLB-pk.Bytes[catLive]), mib(pk.UnsafeLive))
	notLive := pk.HWM - pk.Bytes[catLive]
	// Growth-weighted: each placement that raised the mark, weighted by the bytes it added.
	var gw [numCategories]float64
	var gsum float64
	for _, sn := range bd.Growth {
		nl := float64(sn.HWM - sn.Bytes[catLive])
		if nl <= 0 {
			continue
		}
		for c := catFrag; c < numCategories; c++ {
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
		if c != catLive && notLive > 0 {
			pct = 100 * float64(pk.Bytes[c]) / float64(notLive)
		}
		g := 0.0
		if c != catLive && gsum > 0 {
			g = 100 * gw[c] / gsum
		}
		fmt.Fprintf(w, "   %-14s %10s %8.1f %12.1f %12.1f\n", c, mib(pk.Bytes[c]), pct, g, 100*ta[c]/float64(len(bd.All)))
	}
	return nil
}

// host is a host-program variant of a workload.
type host struct {
	Name string
	In   *Info
}

// hostVariants returns the workload as given and the host programs the
// analysis compares: completions polled or waited for (hostVariant), each
// buffer released after its last use (earlyRelease), and both.
func hostVariants(in *Info) ([]host, error) {
	out := []host{{"as-is", in}}
	add := func(name string, t *trace.Trace) error {
		p, err := t.Resolve()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		v, err := NewInfo(p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, host{name, v})
		return nil
	}
	if err := add("poll", hostVariant(in, Poll)); err != nil {
		return nil, err
	}
	if err := add("stall", hostVariant(in, Stall)); err != nil {
		return nil, err
	}
	if err := add("early-release", earlyRelease(in)); err != nil {
		return nil, err
	}
	er := out[len(out)-1].In
	if err := add("early+stall", hostVariant(er, Stall)); err != nil {
		return nil, err
	}
	return out, nil
}

// namedPlacer is a placement policy for run (nil placer: the Allocator's).
type namedPlacer struct {
	Name string
	Fit  arena.Fit
	New  func(in *Info) placer
}

// placers returns the placement policies PrintIdeas compares.
func placers() []namedPlacer {
	return []namedPlacer{
		{"allocator (lean)", arena.FitLean, nil},
		{"allocator (fast)", arena.FitFast, nil},
		{"low-address", 0, func(*Info) placer { return lowAddr() }},
		{"best-fit-held", 0, func(*Info) placer { return bestFitHeld() }},
		{"best-fit", 0, func(*Info) placer { return bestFit() }},
		{"death-neighbour", 0, func(in *Info) placer { return deathNeighbor(in) }},
		{"two-ended", 0, func(in *Info) placer { return twoEnded(in) }},
		{"size-two-ended", 0, func(in *Info) placer { return sizeTwoEnded(0.25) }},
		{"engine-affinity", 0, func(in *Info) placer { return engineAffinity(in) }},
	}
}

// Idea is one candidate change: a host variant, a placement policy and the
// driver's options.
type Idea struct {
	Name   string
	Host   string // "" or a hostVariants name
	placer *namedPlacer
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
	pl := placers()
	byName := func(n string) *namedPlacer {
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
		{Name: "allocator (lean)", placer: lean},
		{Name: "allocator (fast)", placer: fast},
		{Name: "low-address", placer: low},
		{Name: "best-fit-held", placer: bfh},
		{Name: "best-fit", placer: bf},
		{Name: "death-neighbour", placer: dn},
		{Name: "two-ended", placer: te},
		{Name: "size-two-ended", placer: ste},
		{Name: "engine-affinity", placer: ea},
		{Name: "host polls", Host: "poll", placer: lean},
		{Name: "host stalls on growth", placer: lean, Comp: StallOnGrow},
		{Name: "host stalls", Host: "stall", placer: lean},
		{Name: "early release", Host: "early-release", placer: lean},
		{Name: "wait-fence (schedule)", placer: lean, Pred: PredictSchedule},
		{Name: "wait-fence (est. ±30%)", placer: lean, Pred: PredictEstimate, Spread: 0.3},
		{Name: "wait-fence (est. ±60%)", placer: lean, Pred: PredictEstimate, Spread: 0.6},
		{Name: "wait-fence (any)", placer: lean, Pred: PredictAny},
		{Name: "wait-fence size-matched", placer: lean, Pred: PredictSchedule, Match: 1.5},
		{Name: "wait-fence matched ±30%", placer: lean, Pred: PredictEstimate, Spread: 0.3, Match: 1.5},
		{Name: "wait-fence on growth", placer: lean, Pred: PredictSchedule, OnGrowth: true},
		{Name: "wait-fence on growth ±30%", placer: lean, Pred: PredictEstimate, Spread: 0.3, OnGrowth: true},
		{Name: "wait-fence + polls", Host: "poll", placer: lean, Pred: PredictSchedule},
		{Name: "wait-fence + best-fit-held", placer: bfh, Pred: PredictSchedule},
		{Name: "wait-fence + best-fit", placer: bf, Pred: PredictSchedule},
		{Name: "wait-fence + death-nb", placer: dn, Pred: PredictSchedule},
		{Name: "wait-fence + two-ended", placer: te, Pred: PredictSchedule},
		{Name: "wait-fence + size-2-ended", placer: ste, Pred: PredictSchedule},
		{Name: "wait-fence + engine-aff.", placer: ea, Pred: PredictSchedule},
		{Name: "stalls + best-fit-held", Host: "stall", placer: bfh},
		{Name: "stalls + death-nb", Host: "stall", placer: dn},
		{Name: "early + stalls + death-nb", Host: "early+stall", placer: dn},
	}
}

// ideaResult is one idea on one workload under one policy.
type ideaResult struct {
	Ratio    float64 // HWM / LiveLB of the original schedule
	Makespan float64 // makespan / original makespan
}

// runIdea evaluates id on the host variants of a workload.
func runIdea(hosts []host, id Idea, whole bool) (ideaResult, error) {
	in := hosts[0].In
	if id.Host != "" {
		for _, h := range hosts {
			if h.Name == id.Host {
				in = h.In
			}
		}
	}
	o := Options{Mode: PolicyMode(whole), Fit: id.placer.Fit, Completions: id.Comp, PredictWait: id.Pred,
		PredictOnGrowth: id.OnGrowth, WaitMatch: id.Match}
	if id.placer.New != nil {
		o.placer = id.placer.New(in)
	}
	if id.Pred == PredictEstimate {
		est, err := estimated(in, id.Spread, 7)
		if err != nil {
			return ideaResult{}, err
		}
		o.Estimate = est
	}
	res, _, err := run(in, o)
	if err != nil {
		return ideaResult{}, err
	}
	return ideaResult{Ratio: float64(res.HWM) / float64(hosts[0].In.LiveLB),
		Makespan: float64(res.Makespan) / float64(hosts[0].In.Makespan)}, nil
}

// PrintIdeas prints HWM/LiveLB of every idea on every workload under
// subrange-fenced (whole-fenced in parentheses, "!" where subrange-fenced
// needs more; "+x%" where the idea lengthened the schedule), with the
// ordered lower bound of the workload as given.
func PrintIdeas(w io.Writer, names []string, infos []*Info, ideas []Idea) error {
	hosts := make([][]host, len(infos))
	fmt.Fprintf(w, "%-28s", "HWM/LiveLB sub (whole)")
	for i, in := range infos {
		h, err := hostVariants(in)
		if err != nil {
			return err
		}
		hosts[i] = h
		fmt.Fprintf(w, " %24s", names[i])
	}
	fmt.Fprintf(w, "\n%-28s", "ordered lower bound")
	for _, in := range infos {
		olb, _ := orderedLowerBound(in)
		fmt.Fprintf(w, " %24.3f", float64(olb)/float64(in.LiveLB))
	}
	fmt.Fprintln(w)
	for _, id := range ideas {
		fmt.Fprintf(w, "%-28s", id.Name)
		for i := range infos {
			var r [2]ideaResult
			for k, whole := range []bool{false, true} {
				res, err := runIdea(hosts[i], id, whole)
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
