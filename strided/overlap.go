package strided

import "fmt"

// OverlapResult says whether two layouts over the same buffer share a byte.
type OverlapResult uint8

const (
	// Disjoint: the layouts share no byte. Always exact.
	Disjoint OverlapResult = iota
	// Overlapping: the layouts share at least one byte. Always exact.
	Overlapping
	// MayOverlap: the answer could not be decided within the budget (or a layout is
	// malformed); treat it as Overlapping.
	MayOverlap
)

// overlapNames holds the name of each OverlapResult, indexed by value.
var overlapNames = [...]string{Disjoint: "disjoint", Overlapping: "overlapping", MayOverlap: "may-overlap"}

// String returns "disjoint", "overlapping" or "may-overlap".
func (r OverlapResult) String() string {
	if int(r) < len(overlapNames) && overlapNames[r] != "" {
		return overlapNames[r]
	}
	return fmt.Sprintf("OverlapResult(%d)", uint8(r))
}

// Overlap reports whether layouts a and b (relative to the same buffer) share any byte.
//
// It first decides the question on the canonical forms, without enumerating runs: split the
// dimension with the largest stride, keeping only the copies whose extent meets the other
// layout's extent, and recurse. When both layouts have that stride (two views cut from the
// same rows) it recurses once per difference of indices t = j - i instead of per pair:
// copy i of a meets copy j of b iff a's block meets b's block shifted by t·s. Interleaved
// views then cost O(dimensions):
//
//	fused QKV row, [T, 3H] f32, split by columns: row stride 12H
//	  Q: off 0,  run 4H     |QQQQ|KKKK|VVVV|QQQQ|KKKK|VVVV| ...
//	  K: off 4H, run 4H
//	  t·12H must lie in (0 - 4H - 4H, 0 - 4H + 4H) = (-8H, 0): no integer t, Disjoint.
//
// The recursion visits at most 2·budget blocks. If that is not enough, both covers are
// computed within budget: disjoint covers mean Disjoint (a superset of each is disjoint),
// overlapping exact covers mean Overlapping, anything else is MayOverlap. So the answer is
// exact whenever both covers fit in budget runs, and MayOverlap only beyond it. A budget <= 0
// means DefaultBudget. A malformed layout gives MayOverlap; one with no elements, Disjoint.
func Overlap(a, b Layout, budget int) OverlapResult {
	var ca, cb canon
	if ca.init(a) != nil || cb.init(b) != nil {
		return MayOverlap
	}
	if ca.empty || cb.empty {
		return Disjoint
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	work := 2 * budget
	if hit, ok := overlapCanon(&ca, 0, ca.off, &cb, 0, cb.off, &work); ok {
		if hit {
			return Overlapping
		}
		return Disjoint
	}
	sa, exactA, errA := a.Cover(budget)
	sb, exactB, errB := b.Cover(budget)
	if errA != nil || errB != nil {
		return MayOverlap
	}
	if _, hit := sa.OverlapsSet(&sb); !hit {
		return Disjoint
	}
	if exactA && exactB {
		return Overlapping
	}
	return MayOverlap
}

// overlapCanon decides whether block a.dims[ka:] placed at offA and block b.dims[kb:] placed
// at offB share a byte. ok is false when the work budget ran out or an intermediate did not
// fit in an int64.
func overlapCanon(a *canon, ka int, offA int64, b *canon, kb int, offB int64, work *int) (hit, ok bool) {
	ea, eb := a.extAt(ka), b.extAt(kb)
	if offA >= offB+eb || offB >= offA+ea {
		return false, true
	}
	if ka == a.nd && kb == b.nd {
		return true, true // two runs whose extents meet
	}
	var sa, sb int64
	if ka < a.nd {
		sa = a.dims[ka].s
	}
	if kb < b.nd {
		sb = b.dims[kb].s
	}
	switch {
	case sa == sb:
		s, na, nb := sa, a.dims[ka].n, b.dims[kb].n
		ia, ib := a.extAt(ka+1), b.extAt(kb+1)
		// Copy i of a is [offA + i·s, +ia), copy j of b is [offB + j·s, +ib); with t = j-i
		// they meet iff offB - offA + t·s lies in (-ib, ia).
		d, ok1 := addChecked(offA, -offB)
		lo, ok2 := addChecked(d, -ib)
		hi, ok3 := addChecked(d, ia)
		if !ok1 || !ok2 || !ok3 {
			return false, false
		}
		tlo := max(floorDiv(lo, s)+1, -(na - 1))
		thi := min(ceilDiv(hi, s)-1, nb-1)
		for t := tlo; t <= thi; t++ {
			if *work--; *work < 0 {
				return false, false
			}
			if hit, ok := overlapCanon(a, ka+1, offA, b, kb+1, offB+t*s, work); !ok || hit {
				return hit, ok
			}
		}
		return false, true
	case sa > sb:
		return splitOverlap(a, ka, offA, b, kb, offB, eb, work, false)
	default:
		return splitOverlap(b, kb, offB, a, ka, offA, ea, work, true)
	}
}

// splitOverlap splits dimension kx of x (the larger stride) and recurses for each copy of
// x's inner block that meets y's extent [offY, offY+ey). swapped records the argument order
// of overlapCanon so that recursion keeps a and b in place.
func splitOverlap(x *canon, kx int, offX int64, y *canon, ky int, offY, ey int64, work *int, swapped bool) (hit, ok bool) {
	d := x.dims[kx]
	ix := x.extAt(kx + 1)
	// Copy i, [offX + i·s, +ix), meets y iff offY - offX - ix < i·s < offY - offX + ey.
	diff, ok1 := addChecked(offY, -offX)
	lo, ok2 := addChecked(diff, -ix)
	hi, ok3 := addChecked(diff, ey)
	if !ok1 || !ok2 || !ok3 {
		return false, false
	}
	ilo := max(floorDiv(lo, d.s)+1, 0)
	ihi := min(ceilDiv(hi, d.s)-1, d.n-1)
	for i := ilo; i <= ihi; i++ {
		if *work--; *work < 0 {
			return false, false
		}
		if swapped {
			hit, ok = overlapCanon(y, ky, offY, x, kx+1, offX+i*d.s, work)
		} else {
			hit, ok = overlapCanon(x, kx+1, offX+i*d.s, y, ky, offY, work)
		}
		if !ok || hit {
			return hit, ok
		}
	}
	return false, true
}
