package check

import (
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// Schedule is a simulated run of a trace.Program: when each op ran ([Start[k], End[k])) and
// when the last op ends.
type Schedule struct {
	Start, End []int64
	Makespan   int64
}

// LiveLowerBound returns LiveLB for p on schedule s: the maximum over time of the bytes
// that some pending or future op still needs, counted per granule (see the package doc for
// the precise definition). No safe layout that gives every buffer an offset (in place only
// over a read with the same elements), online or offline, needs a smaller arena for this
// schedule; a plan with placements over strided footprints can (see the package doc).
func LiveLowerBound(p *trace.Program, s Schedule) int64 {
	g := p.Trace.Granule
	var events []liveEvent
	var base int64 // granule index of the current buffer's first granule, in one space for all buffers
	for b, segs := range LiveSegments(p, s) {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		// Granule ranges of consecutive segments overlap at most in one boundary granule.
		for i, sg := range segs {
			if sg.From >= sg.To {
				continue
			}
			first, last := sg.Lo/g, (sg.Hi-1)/g
			ev := liveEvent{from: sg.From, to: sg.To}
			sharedFirst := i > 0 && (segs[i-1].Hi-1)/g == first
			sharedLast := i+1 < len(segs) && segs[i+1].Lo/g == last
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

// LiveSegment is a byte range [Lo, Hi) of one buffer that LiveLowerBound counts live
// over [From, To) of the schedule.
type LiveSegment struct {
	Lo, Hi   int64
	From, To int64
}

// LiveSegments returns, per buffer of p, the segments LiveLowerBound counts on schedule
// s, in byte order: the buffer's bytes cut where the live interval changes, bytes no op
// uses left out. External buffers have none.
func LiveSegments(p *trace.Program, s Schedule) [][]LiveSegment {
	credited := inplaceCredits(p)
	usesOf := p.UsesByBuffer()
	out := make([][]LiveSegment, len(p.Buffers))
	for b := range p.Buffers {
		if !p.Buffers[b].External {
			out[b] = liveSegments(p, b, usesOf[b], s, credited)
		}
	}
	return out
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

// hasNoElements reports whether l has a dimension of size 0.
func hasNoElements(l strided.Layout) bool { return slices.Contains(l.Shape, 0) }

// inplaceCredits marks the read uses whose dying bytes an inplace op's output may take
// over, which LiveLowerBound does not count past the op's start: for each write of an
// inplace op, the first read of another buffer with the same elements up to the offset
// (strided.SameElements).
func inplaceCredits(p *trace.Program) map[trace.OpUse]bool {
	out := map[opUse]bool{}
	for k := range p.Ops {
		op := &p.Ops[k]
		if !op.InPlace {
			continue
		}
		for _, w := range op.Uses {
			lw := p.Layout(w.Ref)
			if w.Access&trace.AccessWrite == 0 || hasNoElements(lw) {
				continue
			}
			for u, r := range op.Uses {
				if r.Access&trace.AccessRead == 0 || r.Ref.Buffer == w.Ref.Buffer || out[opUse{Op: k, Use: u}] ||
					p.Buffers[r.Ref.Buffer].External {
					continue
				}
				// the same elements up to the offset (lw has elements, so a read without
				// any never matches)
				if lr := p.Layout(r.Ref); strided.SameElements(lr, -lr.Offset, lw, -lw.Offset) {
					out[opUse{Op: k, Use: u}] = true
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
//
// The segments lie between consecutive boundaries of the uses' footprints and the death
// pieces; each use folds its start, end and rank into the segments its runs span (the
// last user of a segment is the one ending last, the first in use order among those), so
// the cost is O((R + S) log S) for R runs and S segments.
func liveSegments(p *trace.Program, b int, uses []opUse, s Schedule, credited map[opUse]bool) []LiveSegment {
	if len(uses) == 0 {
		return nil
	}
	fps := make([]ranges.Set, len(uses))
	cuts := []int64{0, p.Buffers[b].Size}
	for j, ou := range uses {
		fps[j], _ = p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
		for _, r := range fps[j].Runs() {
			cuts = append(cuts, r.Lo, r.Hi)
		}
	}
	pieces := p.LetGo(b, 0)
	for _, pc := range pieces {
		for _, r := range pc.Bytes.Runs() {
			cuts = append(cuts, r.Lo, r.Hi)
		}
	}
	cuts = compactCoords(cuts)
	nseg := len(cuts) - 1
	seg := func(x int64) int {
		i, _ := slices.BinarySearch(cuts, x)
		return i
	}
	type user struct {
		from, end int64
		j         int
	}
	tags := sweep.NewTags(nseg, func(a, b user) user {
		out := a
		out.from = min(a.from, b.from)
		if b.end > a.end || (b.end == a.end && b.j < a.j) {
			out.end, out.j = b.end, b.j
		}
		return out
	})
	for j, ou := range uses {
		u := user{from: s.Start[ou.Op], end: s.End[ou.Op], j: j}
		for _, r := range fps[j].Runs() {
			tags.Fold(seg(r.Lo), seg(r.Hi), u)
		}
	}
	held := make([]int, nseg+1)
	for _, pc := range pieces {
		if pc.Step != trace.Never {
			continue
		}
		for _, r := range pc.Bytes.Runs() {
			held[seg(r.Lo)]++
			held[seg(r.Hi)]--
		}
	}
	users, used := tags.Slots(nseg)
	var segs []LiveSegment
	heldHere := 0
	for i := range nseg {
		heldHere += held[i]
		if !used[i] {
			continue
		}
		u := users[i]
		from, to := u.from, u.end
		last := uses[u.j]
		switch {
		case heldHere > 0:
			to = max(to, s.Makespan)
		case credited[last]:
			to = max(from, s.Start[last.Op])
		}
		segs = append(segs, LiveSegment{Lo: cuts[i], Hi: cuts[i+1], From: from, To: to})
	}
	return segs
}

// opUse names one use: op index and index into its Uses.
type opUse = trace.OpUse
