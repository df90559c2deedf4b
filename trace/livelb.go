package trace

import (
	"sort"

	"github.com/subarena/subarena/ranges"
)

// Schedule is a simulated run of a Program: when each op ran ([Start[k], End[k])) and
// when the last op ends.
type Schedule struct {
	Start, End []int64
	Makespan   int64
}

// LiveLowerBound returns LiveLB for p on schedule s: the maximum over time of the bytes
// that some pending or future op still needs, counted per granule (see the package doc for
// the precise definition). No safe allocator, online or offline, needs a smaller arena for
// this schedule.
func LiveLowerBound(p *Program, s Schedule) int64 {
	g := p.Trace.Granule
	credited := inplaceCredits(p)
	usesOf := usesByBuffer(p)
	var events []liveEvent
	var base int64 // granule index of the current buffer's first granule, in one space for all buffers
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		segs := liveSegments(p, b, usesOf[b], s, credited)
		// Granule ranges of consecutive segments overlap at most in one boundary granule.
		for i, sg := range segs {
			if sg.from >= sg.to {
				continue
			}
			first, last := sg.lo/g, (sg.hi-1)/g
			ev := liveEvent{from: sg.from, to: sg.to}
			sharedFirst := i > 0 && (segs[i-1].hi-1)/g == first
			sharedLast := i+1 < len(segs) && segs[i+1].lo/g == last
			ev.exclusive = last - first + 1
			if sharedFirst {
				ev.exclusive--
				ev.shared[0] = base + first
				ev.nshared = 1
			}
			if sharedLast && (last != first || !sharedFirst) {
				ev.exclusive--
				ev.shared[ev.nshared] = base + last
				ev.nshared++
			}
			events = append(events, ev)
		}
		base += (buf.Size + g - 1) / g
	}
	return sweepLive(events, g)
}

// liveSegment is a byte range [lo, hi) of one buffer, live over [from, to).
type liveSegment struct {
	lo, hi   int64
	from, to int64
}

// liveEvent is a segment's granules: exclusive ones it alone touches, and up to two
// boundary granules it may share with its neighbours.
type liveEvent struct {
	from, to  int64
	exclusive int64
	shared    [2]int64
	nshared   int
}

// sweepLive returns the maximum over time of the live granule bytes.
func sweepLive(events []liveEvent, g int64) int64 {
	type edge struct {
		t   int64
		add bool
		i   int
	}
	edges := make([]edge, 0, 2*len(events))
	for i, e := range events {
		edges = append(edges, edge{e.from, true, i}, edge{e.to, false, i})
	}
	// Half-open intervals: at equal times, ends come before starts.
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].t != edges[b].t {
			return edges[a].t < edges[b].t
		}
		return !edges[a].add && edges[b].add
	})
	count := map[int64]int{}
	var live, peak int64
	for i := 0; i < len(edges); i++ {
		e := &events[edges[i].i]
		if edges[i].add {
			live += e.exclusive * g
			for _, sg := range e.shared[:e.nshared] {
				if count[sg]++; count[sg] == 1 {
					live += g
				}
			}
		} else {
			live -= e.exclusive * g
			for _, sg := range e.shared[:e.nshared] {
				if count[sg]--; count[sg] == 0 {
					live -= g
				}
			}
		}
		if i+1 == len(edges) || edges[i+1].t != edges[i].t {
			peak = max(peak, live)
		}
	}
	return peak
}

// inplaceCredits marks, per op, the read uses whose dying bytes an inplace op's output
// may take over: for each write of an inplace op, the first read of another buffer with
// the same element layout up to offset (same shape, strides and elem once size-1 and
// contiguous dimensions are folded).
func inplaceCredits(p *Program) map[opUse]bool {
	out := map[opUse]bool{}
	for k := range p.Ops {
		op := &p.Ops[k]
		if !op.Inplace {
			continue
		}
		for _, w := range op.Uses {
			if w.Access&AccessWrite == 0 {
				continue
			}
			wm := mapOf(p.Layout(w.Ref), 0)
			if wm.empty {
				continue
			}
			for u, r := range op.Uses {
				if r.Access&AccessRead == 0 || r.Ref.Buffer == w.Ref.Buffer || out[opUse{k, u}] ||
					p.Buffers[r.Ref.Buffer].External {
					continue
				}
				rm := mapOf(p.Layout(r.Ref), 0)
				if rm.empty {
					continue
				}
				rm.offset, wm.offset = 0, 0
				if rm.equal(wm) {
					out[opUse{k, u}] = true
					break
				}
			}
		}
	}
	return out
}

// liveSegments splits buffer b into byte segments with one live interval each. A byte x
// is live from the start of the first op using it until the end of the last op using it,
// or until the end of the schedule if the host still holds it then; an inplace op whose
// output may take over a dying read (inplaceCredits) ends that read's bytes at its start
// instead. Bytes no op uses are never live.
func liveSegments(p *Program, b int, uses []opUse, s Schedule, credited map[opUse]bool) []liveSegment {
	type user struct {
		ou  opUse
		set ranges.Set
	}
	var users []user
	cuts := []int64{0, p.Buffers[b].Size}
	for _, ou := range uses {
		fp, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
		users = append(users, user{ou, fp})
		for _, r := range fp.Runs() {
			cuts = append(cuts, r.Lo, r.Hi)
		}
	}
	if len(users) == 0 {
		return nil
	}
	pieces := deathPieces(p, b, 0)
	for _, pc := range pieces {
		for _, r := range pc.set.Runs() {
			cuts = append(cuts, r.Lo, r.Hi)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	cuts = compactInts(cuts)
	var segs []liveSegment
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		from, lastEnd, last := int64(-1), int64(-1), -1
		for j, us := range users {
			if !us.set.Contains(lo) {
				continue
			}
			k := us.ou.op
			if from < 0 || s.Start[k] < from {
				from = s.Start[k]
			}
			if s.End[k] > lastEnd {
				lastEnd, last = s.End[k], j
			}
		}
		if last < 0 {
			continue
		}
		to := lastEnd
		held := false
		for _, pc := range pieces {
			if pc.death == never && pc.set.Contains(lo) {
				held = true
			}
		}
		switch {
		case held:
			to = max(to, s.Makespan)
		case credited[users[last].ou]:
			to = max(from, s.Start[users[last].ou.op])
		}
		segs = append(segs, liveSegment{lo: lo, hi: hi, from: from, to: to})
	}
	return segs
}
