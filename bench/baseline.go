package bench

import (
	"fmt"
	"sort"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace"
)

// FirstFitResult is a trace placed by the FirstFit baseline.
type FirstFitResult struct {
	Plan *trace.Plan
	// HWM is the highest block end; Fragmentation is 1 − largest free /
	// total free within [0, HWM) right after the allocation that first
	// reached HWM (0 when nothing is free there).
	HWM           int64
	Fragmentation float64
	Allocs        int
}

// firstFitModels reports whether FirstFit's whole-buffer lifetimes model
// pol: bytes that return unfenced, whole after their users (WholeAfterUsers)
// or at Release ignoring them (IROrder).
func firstFitModels(pol subarena.Policy) bool {
	return pol.Valid() && !pol.Fenced() && (pol.Whole() || !pol.Safe())
}

// FirstFitPlan places every alloc buffer of p with the FirstFit baseline,
// an address-ordered first-fit free list, in step order. FirstFit knows
// nothing of views, engines or fences, so it cannot back the Allocator;
// it is driven instead by whole-buffer lifetimes derived from the trace
// under one of two policies:
//
//   - IROrder: a buffer's bytes return at its release step, whatever is
//     still pending (what a graph allocator does on one in-order stream);
//   - WholeAfterUsers: they return once the release has happened and the
//     host has observed every op using the buffer complete (as in replay:
//     at a sync, or at the end).
//
// Discards are ignored (whole-buffer lifetimes) and nothing is donated.
// Other policies are an error matching ErrInvalidWorkload.
func FirstFitPlan(p *trace.Program, policy subarena.Policy) (*FirstFitResult, error) {
	if !firstFitModels(policy) {
		return nil, fmt.Errorf("%w: first-fit lifetimes under %v", ErrInvalidWorkload, policy)
	}
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	g := p.Trace.Granule
	capacity := g
	freeAt := make(map[int][]int) // step → buffers whose bytes return then
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		capacity += (buf.Size + g - 1) &^ (g - 1)
		if buf.Release < 0 {
			continue
		}
		at := buf.Release
		if policy.Safe() {
			at = max(at, tl.usersDoneStep(b))
		}
		if at < len(p.Trace.Steps) {
			freeAt[at] = append(freeAt[at], b)
		}
	}
	ff, err := NewFirstFit(capacity, g)
	if err != nil {
		return nil, err
	}
	res := &FirstFitResult{Plan: &trace.Plan{Trace: p.Trace.Name, Offsets: map[string]int64{},
		Policy: "first-fit/" + policy.String()}}
	blocks := make([]arena.Block, len(p.Buffers))
	var free []arena.Block
	for i, s := range p.Trace.Steps {
		if s.Kind == trace.KindAlloc {
			b := p.StepIndex[i]
			blk, err := ff.Alloc(p.Buffers[b].Size)
			if err != nil {
				return nil, fmt.Errorf("bench: first-fit %s step %d: %w", p.Trace.Name, i, err)
			}
			blocks[b] = blk
			res.Plan.Offsets[p.Buffers[b].Name] = blk.Offset
			res.Allocs++
			if end := blk.Offset + blk.Size; end > res.HWM {
				res.HWM = end
				free = ff.AppendFreeRegions(free[:0])
				res.Fragmentation = gapFragmentation(free, res.HWM)
			}
		}
		done := freeAt[i]
		sort.Ints(done)
		for _, b := range done {
			if err := ff.Free(blocks[b].Offset, blocks[b].Size); err != nil {
				return nil, fmt.Errorf("bench: first-fit %s step %d: %w", p.Trace.Name, i, err)
			}
		}
	}
	res.Plan.Size = res.HWM
	return res, nil
}

// gapFragmentation is 1 − largest / total over the free blocks clipped to
// [0, limit); 0 when nothing is free there.
func gapFragmentation(free []arena.Block, limit int64) float64 {
	var total, largest int64
	for _, f := range free {
		n := min(f.End(), limit) - f.Offset
		if n <= 0 {
			continue
		}
		total += n
		largest = max(largest, n)
	}
	if total == 0 {
		return 0
	}
	return 1 - float64(largest)/float64(total)
}
