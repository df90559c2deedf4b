package replay

import (
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// opUse names one use: op index and index into its Uses.
type opUse = trace.OpUse

// Donation is an in-place placement Run makes (unless Options.NoDonate): the buffer
// takes, at its alloc, the bytes of use Read (an index into the Uses of op Op) — a read
// of another buffer whose last user is that op. Op is -1 for a buffer Run places
// anywhere else.
type Donation struct{ Op, Read int }

// Donations returns, per buffer of p, the in-place placement Run plans for it, order
// being p's happens-before relation (trace.NewOrder). Analyses that mirror a replay use
// it to make the same placements. A read through a view that covers all of its buffer
// (a reshape) is never donated, as ggml's graph allocator never reuses a view's bytes in
// place: a donated output keeps its input's address, above holes that open later.
func Donations(p *trace.Program, order *trace.Order) []Donation {
	return planDonations(p, p.UsesByBuffer(), order, false)
}

// planDonations decides, per alloc buffer, whether replay donates to it (see Run).
// A buffer is donated to only when every later op using it happens-after the donating
// op: bytes handed over in place carry the read view's users, and an op that could run
// alongside the donor (a racy read of its output) would share them unordered.
//
// A view that covers all of its buffer (a reshape or permute of it) is never donated
// through; the buffer read directly is. ggml's graph allocator does the same: it hands
// a node its parent's bytes only when the parent is its own allocation, never a view
// (ggml_gallocr_allocate_node), and the donation it forgoes matters for where later
// outputs go. A donated output keeps its input's address even when a lower hole of its
// size has opened since the input was placed: on llama.cpp's flash-attention prefill,
// the roped Q handed its matmul output through a reshape stays above the hole the
// released attention norm left, the attention output takes that hole, the projection
// and residual then sit above it, and the wider FFN outputs stack above them, 1.097×
// ggml's buffer where a fresh roped Q takes the hole and the FFN fits as in ggml. A
// view that is one part of its buffer (Q of a fused QKV, gate of a fused gate/up) is
// still donated through: ggml never can (the buffer has other views), and on the
// LLaMA-7B decode with fused QKV and gate/up it puts the replay below ggml's buffer.
func planDonations(p *trace.Program, usesOf [][]opUse, order *trace.Order, off bool) []Donation {
	out := make([]Donation, len(p.Buffers))
	for i := range out {
		out[i] = Donation{Op: -1}
	}
	if off {
		return out
	}
	taken := map[opUse]bool{}
	for b := range p.Buffers {
		if p.Buffers[b].External || len(usesOf[b]) == 0 {
			continue
		}
		first := usesOf[b][0]
		op := &p.Ops[first.Op]
		w := op.Uses[first.Use]
		if !op.InPlace || w.Access&trace.AccessWrite == 0 || discardedBefore(p, b, op.Step, nil) ||
			!laterUsesOrdered(usesOf[b], first.Op, order) {
			continue
		}
		for u := range op.Uses {
			if u == first.Use || taken[opUse{Op: first.Op, Use: u}] || !donatable(p, usesOf, first.Op, u, b, w.Ref, out) {
				continue
			}
			out[b] = Donation{Op: first.Op, Read: u}
			taken[opUse{Op: first.Op, Use: u}] = true
			break
		}
	}
	return out
}

// laterUsesOrdered reports whether every use in uses by an op other than k is by an op
// that op k happens-before.
func laterUsesOrdered(uses []opUse, k int, order *trace.Order) bool {
	for _, ou := range uses {
		if ou.Op != k && !order.HappensBefore(k, ou.Op) {
			return false
		}
	}
	return true
}

// donatable reports whether use u of op k (a read R of buffer a) may host buffer b,
// written by op k through ref w.
func donatable(p *trace.Program, usesOf [][]opUse, k, u, b int, w trace.Ref, planned []Donation) bool {
	op := &p.Ops[k]
	use := op.Uses[u]
	a := use.Ref.Buffer
	A := &p.Buffers[a]
	if a == b || A.External || use.Access&trace.AccessRead == 0 || A.Release < 0 || A.Release < op.Step ||
		planned[a].Op == k {
		return false
	}
	l := p.Layout(use.Ref)
	if !l.IsDense() {
		return false
	}
	ext, err := l.Extent()
	if err != nil || ext.Len() != p.Buffers[b].Size || !p.SameElements(use.Ref, 0, w, ext.Lo) {
		return false
	}
	if use.Ref.View >= 0 && ext.Len() == A.Size {
		return false // a reshape of all of R's buffer: see planDonations
	}
	fp, exact := p.Footprint(use.Ref)
	if !exact || discardedBefore(p, a, op.Step, &fp) || !letsGoFirst(p, a, b, &fp, ext.Lo) {
		return false
	}
	for _, ou := range usesOf[a] {
		if ou.Op < k || (ou.Op == k && ou.Use == u) {
			continue
		}
		other, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
		if _, hit := other.OverlapsSet(&fp); hit {
			return false // a later step (or another use of this op) still needs R's bytes
		}
	}
	return true
}

// letsGoFirst reports whether buffer a lets every byte of fp (a's bytes, B's byte y at
// a's byte lo+y) go strictly before buffer b lets the byte over it go. docs/TRACE.md's safety
// rule orders two buffers sharing a byte by which one lets it go first, where a discard
// of a view lets its bytes go while the buffer is held: the checker then requires every
// use through the first to happen-before every use through the second. R's users precede
// the donor op and B's users follow it, so a donation is safe only when R's buffer goes
// first for every byte it hands over, by its release or a discard, whichever comes first
// per byte: B discarding a view of them, or releasing them, before a does reverses the
// order, and bytes both hold to the end may not be shared at all.
func letsGoFirst(p *trace.Program, a, b int, fp *ranges.Set, lo int64) bool {
	over := fp.Clone()
	_ = over.Translate(-lo)
	pbs := p.LetGo(b, 0)
	for _, pa := range p.LetGo(a, -lo) {
		x := ranges.Intersect(&over, &pa.Bytes)
		if x.IsEmpty() {
			continue
		}
		for _, pb := range pbs {
			if _, hit := pb.Bytes.OverlapsSet(&x); hit && (pa.Step >= pb.Step) {
				return false
			}
		}
	}
	return true
}

// discardedBefore reports whether a view of buffer b discarded before step overlaps set
// (any view, when set is nil).
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
