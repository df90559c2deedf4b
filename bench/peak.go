package bench

import (
	"math"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
)

// peakStep returns the first step after which the replay's high-water mark
// equals its final value (-1 if the trace allocates nothing).
func peakStep(res *replay.Result) int {
	for i, s := range res.Steps {
		if s.HighWater == res.HWM && res.HWM > 0 {
			return i
		}
	}
	return -1
}

// peakFragmentation returns the external fragmentation of the arena right
// after the step that first reached the replay's high-water mark: 1 −
// largest free run / total free bytes within [0, HWM).
//
// replay.Result records in-use byte counts per step but not where the
// free bytes lie, so the arena's occupancy at that step is rebuilt from the
// plan and the trace: the bytes of buffers allocated and not yet released,
// plus the bytes released (or discarded) whose return to the arena the
// policy still holds back — under ir-order none; under the subrange
// policies every byte an op not yet observed complete uses; under the
// whole policies every byte of a released piece any such op still uses —
// rounded out to granules. The rebuilt in-use byte count must equal the
// replay's own; when it does not (ok false), the fragmentation is unknown
// and NaN is returned rather than a guess.
func peakFragmentation(p *trace.Program, res *replay.Result) (frag float64, ok bool, err error) {
	k := peakStep(res)
	if k < 0 {
		return 0, true, nil
	}
	tl, err := newTimeline(p)
	if err != nil {
		return math.NaN(), false, err
	}
	used := occupancy(p, tl, res, k)
	g := p.Trace.Granule
	used = used.AlignOut(g)
	if used.Len() != res.Steps[k].InUse {
		return math.NaN(), false, nil
	}
	var total, largest, at int64
	for _, r := range used.Runs() {
		if r.Lo > at {
			total += r.Lo - at
			largest = max(largest, r.Lo-at)
		}
		at = max(at, r.Hi)
	}
	if res.HWM > at {
		total += res.HWM - at
		largest = max(largest, res.HWM-at)
	}
	if total == 0 {
		return 0, true, nil
	}
	return 1 - float64(largest)/float64(total), true, nil
}

// occupancy returns the arena bytes not clean after step k.
func occupancy(p *trace.Program, tl *timeline, res *replay.Result, k int) ranges.Set {
	var used ranges.Set
	placed := make(map[string]replay.BufferLifetime, len(res.Lifetimes))
	for _, lt := range res.Lifetimes {
		placed[lt.Buffer] = lt
	}
	lifetimeOf := func(b int) (replay.BufferLifetime, bool) {
		lt, ok := placed[p.Buffers[b].Name]
		return lt, ok
	}
	births := deferredBirths(p)
	// born returns the step from which buffer b holds its bytes: its alloc
	// step, or the in-place op replay defers it to.
	born := func(b int) int {
		if s, ok := births[b]; ok {
			return s
		}
		return p.Buffers[b].Step
	}
	whole := res.Policy.Whole()
	// Live bytes first: later buffers may have taken released bytes.
	var live ranges.Set
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		lt, ok := lifetimeOf(b)
		if buf.External || !ok || born(b) > k {
			continue
		}
		own := ranges.FromRanges(ranges.Range{Lo: 0, Hi: buf.Size})
		if buf.Release >= 0 && buf.Release <= k {
			continue
		}
		for _, d := range buf.Discards {
			v := &p.Views[d]
			if v.Discard <= k {
				fp, _ := p.Footprint(trace.Ref{Buffer: b, View: d})
				own.RemoveSet(&fp)
			}
		}
		shifted := shift(&own, lt.Offset)
		live.AddSet(&shifted)
	}
	used.AddSet(&live)
	if !res.Policy.Safe() {
		return used
	}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		lt, ok := lifetimeOf(b)
		if buf.External || !ok || born(b) > k {
			continue
		}
		// Each piece the host has let go by step k (a discarded view's
		// bytes, or the rest at the release) is held where a pending op
		// uses it — all of it, under the whole policies.
		pend := tl.pendingCover(b, k)
		pendAbs := shift(&pend, lt.Offset)
		for _, pc := range pieces(p, b) {
			if pc.death > k {
				continue
			}
			// Bytes a later buffer took are that buffer's (already counted).
			rest := shift(&pc.bytes, lt.Offset)
			rest.RemoveSet(&live)
			in := ranges.Intersect(&rest, &pendAbs)
			if whole && !in.IsEmpty() {
				in = rest
			}
			used.AddSet(&in)
		}
	}
	return used
}

// shift returns s moved by off bytes.
func shift(s *ranges.Set, off int64) ranges.Set {
	var out ranges.Set
	for _, r := range s.Runs() {
		out.Add(ranges.Range{Lo: r.Lo + off, Hi: r.Hi + off})
	}
	return out
}
