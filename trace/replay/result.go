package replay

import (
	"math"
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// result assembles the Result after the last completion.
// WithWaits returns a copy of p's trace in which every op also waits for the ops
// res.AddedWaits lists for it (Options.WaitReuse): the trace res.Plan is safe for, as
// check.Plan verifies. Without added waits it returns p's trace itself.
func (res *Result) WithWaits(p *trace.Program) *trace.Trace {
	t := p.Trace
	added := false
	for _, ws := range res.AddedWaits {
		added = added || len(ws) > 0
	}
	if !added {
		return t
	}
	out := *t
	out.Steps = slices.Clone(t.Steps)
	for k, ws := range res.AddedWaits {
		if len(ws) == 0 || k >= len(p.Ops) {
			continue
		}
		s := &out.Steps[p.Ops[k].Step]
		s.Waits = slices.Clone(s.Waits)
		for _, w := range ws {
			s.Waits = append(s.Waits, p.Ops[w].Name)
		}
	}
	return &out
}

func (r *replayer) result() *Result {
	p := r.p
	st := r.alloc.Stats()
	res := &Result{Trace: p.Trace.Name, Policy: r.opts.Policy, HWM: st.HighWater, PendingPeak: r.pendPeak,
		Waited: r.countWaited(), Donated: r.nDonated, Buffers: p.NumAllocs(), Ops: len(p.Ops), Steps: r.steps,
		AllocatorTime: r.allocTimeSpent, AddedWaits: r.addedWaits}
	res.Final = StepRecord{Step: len(p.Trace.Steps), InUse: st.InUse, Live: st.Live, Pending: st.Pending,
		HighWater: st.HighWater}
	for _, s := range r.steps {
		res.HeldPeak = max(res.HeldPeak, s.Live)
	}
	for k := range p.Ops {
		res.Makespan = max(res.Makespan, r.end[k])
		res.Final.Time = max(res.Final.Time, r.end[k], r.host)
		res.OpTimes = append(res.OpTimes, OpRecord{Op: p.Ops[k].Name, Engine: p.Trace.Engines[p.Ops[k].Engine],
			Submit: r.submit[k], Start: r.start[k], End: r.end[k]})
	}
	res.LiveLB = check.LiveLowerBound(p, check.Schedule{Start: r.start, End: r.end, Makespan: res.Makespan})
	if res.LiveLB > 0 {
		res.Overhead = float64(res.HWM)/float64(res.LiveLB) - 1
	}
	res.Plan = &trace.Plan{Trace: p.Trace.Name, Size: res.HWM, Offsets: make(map[string]int64, res.Buffers),
		Policy: r.opts.Policy.String(), LowerBound: res.LiveLB}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		res.Plan.Offsets[buf.Name] = r.bufs[b].Offset()
		lt := BufferLifetime{Buffer: buf.Name, Offset: r.bufs[b].Offset(), Size: buf.Size, Alloc: r.allocTime[b],
			Donated: r.donated[b]}
		pieces := p.LetGo(b, 0)
		spans := r.useSpans(b, pieces)
		for i, pc := range pieces {
			pl := PieceLifetime{Released: -1, FirstUse: spans[i].first, LastUse: spans[i].last}
			pl.Range = pc.Bytes.Bounds()
			if pc.Step != trace.Never {
				pl.Released = r.steps[pc.Step].Time
			}
			lt.Pieces = append(lt.Pieces, pl)
		}
		res.Lifetimes = append(res.Lifetimes, lt)
	}
	return res
}

// useSpan is when the ops using a piece's bytes ran: the earliest start and the latest
// end, -1 both when no op used them.
type useSpan struct{ first, last int64 }

// useSpans returns, per piece of buffer b, the span of the ops whose uses of b meet it.
// Few pieces are met use by use; many are found through the runs of their partition, each
// use folding its start and end into the runs its footprint spans, in O((R + P) log P).
func (r *replayer) useSpans(b int, pieces []trace.Piece) []useSpan {
	p := r.p
	out := make([]useSpan, len(pieces))
	for i := range out {
		out[i] = useSpan{-1, -1}
	}
	merge := func(s *useSpan, start, end int64) {
		if s.first < 0 || start < s.first {
			s.first = start
		}
		s.last = max(s.last, end)
	}
	if len(pieces) <= scanPiecesUpTo {
		for i := range pieces {
			for _, ou := range r.usesOf[b] {
				fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
				if _, hit := fp.OverlapsSet(&pieces[i].Bytes); hit {
					merge(&out[i], r.start[ou.Op], r.end[ou.Op])
				}
			}
		}
		return out
	}
	part := partition(pieces)
	tags := sweep.NewTags(len(part), func(a, b useSpan) useSpan {
		return useSpan{min(a.first, b.first), max(a.last, b.last)}
	})
	for _, ou := range r.usesOf[b] {
		fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
		for _, run := range fp.Runs() {
			lo := sort.Search(len(part), func(i int) bool { return part[i].R.Hi > run.Lo })
			hi := sort.Search(len(part), func(i int) bool { return part[i].R.Lo >= run.Hi })
			if lo < hi {
				tags.Fold(lo, hi, useSpan{r.start[ou.Op], r.end[ou.Op]})
			}
		}
	}
	spans, used := tags.Slots(len(part))
	for i, pr := range part {
		if used[i] {
			merge(&out[pr.Piece], spans[i].first, spans[i].last)
		}
	}
	return out
}

// countWaited returns the number of allocations handed bytes that an op of another
// buffer used and that had not completed at the host's time then: the op was submitted
// before the allocation, and ends after the host's time. It replays r.log against the
// arena bytes each submitted op's uses of placed buffers reach, keeping for every byte the
// latest end of an op using it (a range-max index over the bytes the replay placed), so
// each allocation costs a query instead of a scan of the buffers placed before it.
func (r *replayer) countWaited() int {
	p := r.p
	// Arena bytes of use u of op k, once both are known.
	arena := func(k, u int) ranges.Set {
		ref := p.Ops[k].Uses[u].Ref
		fp, _ := p.Footprint(ref)
		shifted, _ := translated(&fp, r.bufs[ref.Buffer].Offset())
		return shifted
	}
	var coords []int64
	for b, buf := range r.bufs {
		if buf != nil {
			g := buf.Range()
			coords = append(coords, g.Lo, g.Hi)
			for _, ou := range r.usesOf[b] {
				fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
				for _, run := range fp.Runs() {
					coords = append(coords, run.Lo+buf.Offset(), run.Hi+buf.Offset())
				}
			}
		}
	}
	coords = compactCoords(coords)
	ix := newMaxIndex(coords)
	submitted := make([]bool, len(p.Ops))
	placed := make([]bool, len(p.Buffers))
	add := func(k, u int) {
		set := arena(k, u)
		for _, run := range set.Runs() {
			ix.raise(run, r.end[k])
		}
	}
	waited := 0
	for _, ev := range r.log {
		if ev.buf < 0 {
			k := ev.op
			submitted[k] = true
			for u, use := range p.Ops[k].Uses {
				if placed[use.Ref.Buffer] {
					add(k, u)
				}
			}
			continue
		}
		b := ev.buf
		if ev.count && ix.max(r.bufs[b].Range()) > ev.host {
			waited++
		}
		placed[b] = true
		for _, ou := range r.usesOf[b] {
			if !submitted[ou.Op] {
				break // ops are submitted in order
			}
			add(ou.Op, ou.Use)
		}
	}
	return waited
}

// maxIndex keeps, over byte ranges with ends among its coordinates, the largest value
// raised over each byte, and answers the largest over a range: O(log n) each.
type maxIndex struct {
	coords []int64
	size   int
	tag    []int64 // raised over the node's whole range
	sub    []int64 // the largest value over any byte of the node's range
}

func newMaxIndex(coords []int64) *maxIndex {
	n := 1
	for n < len(coords)-1 {
		n <<= 1
	}
	ix := &maxIndex{coords: coords, size: n, tag: make([]int64, 2*n), sub: make([]int64, 2*n)}
	for i := range ix.tag {
		ix.tag[i], ix.sub[i] = math.MinInt64, math.MinInt64
	}
	return ix
}

func (ix *maxIndex) leaves(r ranges.Range) (int, int) {
	lo, _ := slices.BinarySearch(ix.coords, r.Lo)
	hi, _ := slices.BinarySearch(ix.coords, r.Hi)
	return lo + ix.size, hi + ix.size
}

// raise raises every byte of r (non-empty) to at least x.
func (ix *maxIndex) raise(r ranges.Range, x int64) {
	l0, r0 := ix.leaves(r)
	for l, h := l0, r0; l < h; l, h = l>>1, h>>1 {
		if l&1 == 1 {
			ix.tag[l], ix.sub[l] = max(ix.tag[l], x), max(ix.sub[l], x)
			l++
		}
		if h&1 == 1 {
			h--
			ix.tag[h], ix.sub[h] = max(ix.tag[h], x), max(ix.sub[h], x)
		}
	}
	for _, v := range [2]int{l0, r0 - 1} {
		for ; v >= 1; v >>= 1 {
			ix.sub[v] = max(ix.sub[v], x)
		}
	}
}

// max returns the largest value raised over any byte of r (MinInt64 for none or empty r).
func (ix *maxIndex) max(r ranges.Range) int64 {
	if r.Empty() {
		return math.MinInt64
	}
	l0, r0 := ix.leaves(r)
	out := int64(math.MinInt64)
	for l, h := l0, r0; l < h; l, h = l>>1, h>>1 {
		if l&1 == 1 {
			out = max(out, ix.sub[l])
			l++
		}
		if h&1 == 1 {
			h--
			out = max(out, ix.sub[h])
		}
	}
	for _, v := range [2]int{l0, r0 - 1} {
		for v >>= 1; v >= 1; v >>= 1 {
			out = max(out, ix.tag[v])
		}
	}
	return out
}

// scanPiecesUpTo is the number of pieces up to which useSpans meets every use with every
// piece; above it, it folds the uses over the runs of the pieces' partition.
const scanPiecesUpTo = 8

// partition returns the runs of pieces, sorted by Lo.
func partition(pieces []trace.Piece) []sweep.PartRun {
	return sweep.PartRuns(len(pieces), func(i int) *ranges.Set { return &pieces[i].Bytes })
}

// translated returns a copy of s moved by d (s is not modified); on overflow it returns
// the copy unmoved and false.
func translated(s *ranges.Set, d int64) (ranges.Set, bool) {
	c := s.Clone()
	if err := c.Translate(d); err != nil {
		return c, false
	}
	return c, true
}

// compactCoords sorts xs and drops duplicates, in place.
func compactCoords(xs []int64) []int64 {
	slices.Sort(xs)
	return slices.Compact(xs)
}
