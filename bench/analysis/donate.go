package analysis

import (
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// donation is a planned in-place placement (replay.Run's rule, reproduced
// here because the replay keeps it unexported): buffer placed by op over the
// bytes of the op's use read. op is -1 when the buffer is not donated to.
type donation struct{ op, read int }

func planDonations(p *trace.Program, usesOf [][]opUse, order *trace.Order) []donation {
	out := make([]donation, len(p.Buffers))
	for i := range out {
		out[i] = donation{op: -1}
	}
	taken := map[opUse]bool{}
	for b := range p.Buffers {
		if p.Buffers[b].External || len(usesOf[b]) == 0 {
			continue
		}
		first := usesOf[b][0]
		op := &p.Ops[first.op]
		w := op.Uses[first.use]
		if !op.Inplace || w.Access&trace.AccessWrite == 0 || discardedBefore(p, b, op.Step, nil) ||
			!laterUsesOrdered(usesOf[b], first.op, order) {
			continue
		}
		for u := range op.Uses {
			if u == first.use || taken[opUse{first.op, u}] || !donatable(p, usesOf, first.op, u, b, w.Ref, out) {
				continue
			}
			out[b] = donation{op: first.op, read: u}
			taken[opUse{first.op, u}] = true
			break
		}
	}
	return out
}

func laterUsesOrdered(uses []opUse, k int, order *trace.Order) bool {
	for _, ou := range uses {
		if ou.op != k && !order.HappensBefore(k, ou.op) {
			return false
		}
	}
	return true
}

func donatable(p *trace.Program, usesOf [][]opUse, k, u, b int, w trace.Ref, planned []donation) bool {
	op := &p.Ops[k]
	use := op.Uses[u]
	a := use.Ref.Buffer
	A := &p.Buffers[a]
	if a == b || A.External || use.Access&trace.AccessRead == 0 || A.Release < 0 || A.Release < op.Step ||
		planned[a].op == k {
		return false
	}
	l := p.Layout(use.Ref)
	if !l.IsDense() {
		return false
	}
	ext, err := l.Extent()
	if err != nil || ext.Len() != p.Buffers[b].Size ||
		!p.SameElements(use.Ref, 0, w, ext.Lo) {
		return false
	}
	fp, exact := p.Footprint(use.Ref)
	if !exact || discardedBefore(p, a, op.Step, &fp) || !letsGoFirst(p, a, b, &fp, ext.Lo) {
		return false
	}
	for _, ou := range usesOf[a] {
		if ou.op < k || (ou.op == k && ou.use == u) {
			continue
		}
		other, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
		if _, hit := other.OverlapsSet(&fp); hit {
			return false
		}
	}
	return true
}

func letsGoFirst(p *trace.Program, a, b int, fp *ranges.Set, lo int64) bool {
	over := fp.Clone()
	_ = over.Translate(-lo)
	pa := deathPieces(p, a)
	for i := range pa {
		_ = pa[i].set.Translate(-lo)
	}
	for _, x0 := range pa {
		x := ranges.Intersect(&over, &x0.set)
		if x.IsEmpty() {
			continue
		}
		for _, pb := range deathPieces(p, b) {
			if _, hit := pb.set.OverlapsSet(&x); hit && (x0.death >= pb.death) {
				return false
			}
		}
	}
	return true
}

func discardedBefore(p *trace.Program, b, step int, set *ranges.Set) bool {
	for _, v := range p.Buffers[b].Discards {
		if p.Views[v].Discard >= step {
			continue
		}
		if set == nil {
			return true
		}
		fp, _ := p.Footprint(trace.Ref{Buffer: b, View: v})
		if _, hit := fp.OverlapsSet(set); hit {
			return true
		}
	}
	return false
}
