package plan

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// maxOrderBoundOps caps OrderBound's op count: it keeps two n×n bit
// matrices.
const maxOrderBoundOps = 1 << 15

// OrderBound returns a height no safe plan of p's trace is below, in its own
// op order or in any other that keeps every op after those it depends on
// (OpDependencies): Reorder's orders included. When a plan's size meets it,
// no reordering can lower that plan. One-engine traces only (an error
// matching ErrNotReordered otherwise).
//
// At each op k it counts the bytes every such order holds at once: the
// bytes k reads and writes (for an inplace op, whose new output may take
// the bytes of an input, only those of its other operands or of its
// largest new output, whichever is more), and each byte of another use
// that an op depending on k's ancestors must use before k and one of k's
// descendants after it (or that is held to the end once used, unless a
// discarded view covers it): no buffer can take such a byte during k,
// whatever the order. A host fill counts from the byte's first reader,
// where a trace may allocate it.
//
// Two ops neither of which must run first (the gate and up products of a
// feed-forward block, two branches) run in one order or the other: each
// such pair gives the smaller of k's count with j and j's ancestors run
// before k and j's count with k and k's ancestors run before j, which
// counts the first one's result beside the second (a bound however the
// order breaks the tie). And at an op that is not inplace, a buffer whose
// bytes held then form several runs pins its whole span, beside the held
// runs of other buffers too long to lie in its gaps (the hole bound on
// the bytes every order holds; only buffers that no plan lays over a
// strided footprint count). The most of all of these is the bound.
//
// Cost: O(n²/64) words and time for the ancestor and descendant sets of n
// ops, plus O(n·U) for U uses and O(n·B²) runs compared for B buffers
// with held bytes at an op, plus the pairs, whose work is capped
// (orderBoundWork: past it the bound found so far is returned); an error
// matching ErrTooLarge beyond 2¹⁵ ops.
func OrderBound(p *trace.Program) (int64, error) {
	if p == nil || p.Trace == nil {
		return 0, fmt.Errorf("nil program: %w", ErrInvalidTrace)
	}
	if n := len(p.Trace.Engines); n != 1 {
		return 0, fmt.Errorf("%w: %d engines", ErrNotReordered, n)
	}
	n := len(p.Ops)
	if n > maxOrderBoundOps {
		return 0, fmt.Errorf("%w: %d ops for the order bound (at most %d)", ErrTooLarge, n, maxOrderBoundOps)
	}
	p = p.Clone()
	g := newDepGraph(p)
	anc := reachable(g.pred, false) // anc row k: ops that run before k in every order
	desc := reachable(g.succ, true) // desc row k: ops that run after k in every order
	return mostLive(p, anc, desc), nil
}

// bitMatrix is a square bit matrix over ops, one row of words per op.
type bitMatrix struct {
	words int
	bits  []uint64
}

// row returns row k.
func (m bitMatrix) row(k int) []uint64 { return m.bits[k*m.words : (k+1)*m.words] }

// has reports whether bit j of row k is set.
func (m bitMatrix) has(k, j int) bool { return m.bits[k*m.words+j/64]&(1<<(j%64)) != 0 }

// reachable returns the matrix whose row k holds every op reachable from op k through
// edges (edges[k] lists the ops k has an edge to). The edges of an acyclic graph must all
// lead to lower ops, or with reverse set all to higher ones, so that rows are complete
// before they are read.
func reachable(edges [][]int32, reverse bool) bitMatrix {
	n := len(edges)
	m := bitMatrix{words: (n + 63) / 64}
	m.bits = make([]uint64, n*m.words)
	for i := range n {
		k := i
		if reverse {
			k = n - 1 - i
		}
		r := m.row(k)
		for _, j := range edges[k] {
			for w, x := range m.row(int(j)) {
				r[w] |= x
			}
			r[j/64] |= 1 << (j % 64)
		}
	}
	return m
}

// orderBoundWork caps the work of OrderBound's pairs (pairs tried, words of
// the op sets formed, uses visited): past it the bound found so far is
// returned (each pair's figure is a bound of its own, so any partial
// maximum is one too).
const orderBoundWork = 1 << 21

// mostLive returns the most bytes held at once while an op k runs, over
// every k, in every order where the ops of anc's row k run before k and
// those of desc's row k after it (see OrderBound), then raises it with the
// pairs of ops neither of which must run first and the holes of rigid
// buffers (see liveCounter).
func mostLive(p *trace.Program, anc, desc bitMatrix) int64 {
	c := newLiveCounter(p, anc, desc)
	n := len(p.Ops)
	var best int64
	for k := range n {
		best = max(best, c.single(k))
	}
	// Pairs: j and k unordered by their dependencies (j > k is never an
	// ancestor of k). Every order runs one of them first, so the smaller
	// of the two figures, each counted with the other (and its ancestors)
	// run before, is a bound.
	work := 0
	for k := range n {
		for j := k + 1; j < n && work < orderBoundWork; j++ {
			work++
			if desc.has(k, j) {
				continue
			}
			a := c.pair(k, j, &work)
			if a <= best {
				continue
			}
			if b := c.pair(j, k, &work); min(a, b) > best {
				best = min(a, b)
			}
		}
	}
	return best
}

// liveCounter counts, for an op k and sets of ops known to run before and
// after it, the bytes every such order holds while k runs: k's own
// operands (at an inplace op, whose new output may take the bytes of
// another operand, those of the others or of the largest such output),
// and each byte of another use that an op known to run before k uses and
// one known to run after it uses too (or that is held to the end once
// used, but for the bytes of a discarded view).
//
// At an op that is not inplace it also counts holes: a rigid buffer b
// (one no plan lays over a strided footprint of another: its bytes keep
// their offsets relative to each other) whose bytes held during k form
// several runs pins the span from its first held byte to its last, and a
// held run of another rigid buffer longer than b's longest gap cannot lie
// in that span without meeting one of b's held bytes. So the span plus
// those runs is a bound too (the planner's hole bound, see holebound.go,
// on the bytes every order holds). On a fused QKV projection whose K and
// V parts went to the cache before the attention scores, the Q rows still
// pin the whole projection.
type liveCounter struct {
	p         *trace.Program
	anc, desc bitMatrix
	uses      [][]obUse    // per buffer, the uses of it (none for externals)
	held      []bool       // per buffer: never released
	discarded []ranges.Set // per held buffer: the bytes of its discarded views (a superset when inexact)
	rigid     []bool       // per buffer: placed at one offset in every plan
	own       [][]ownBytes
	ownTotal  []int64   // per op: its own operands' bytes
	opBufs    [][]int32 // per op: the distinct non-external buffers it uses
	row       []uint64  // pair's scratch: the ops run before
	stamp     []int32   // per buffer: the pair that last counted it
	epoch     int32
	base      []int64 // per op: its figure without holes (-1: not yet)
	// Scratch sets.
	before, after, cut ranges.Set
	spans              []ranges.Set // per buffer, held bytes at the op (holes)
}

type obUse struct {
	op    int
	fp    ranges.Set
	exact bool
}

// ownBytes is the bytes of one buffer an op uses, read or written (exact
// footprints only).
type ownBytes struct {
	buf  int
	both ranges.Set
}

func newLiveCounter(p *trace.Program, anc, desc bitMatrix) *liveCounter {
	n, nb := len(p.Ops), len(p.Buffers)
	c := &liveCounter{p: p, anc: anc, desc: desc, uses: make([][]obUse, nb), held: make([]bool, nb), discarded: make([]ranges.Set, nb),
		rigid: make([]bool, nb), own: make([][]ownBytes, n), ownTotal: make([]int64, n), opBufs: make([][]int32, n),
		row: make([]uint64, anc.words), stamp: make([]int32, nb), spans: make([]ranges.Set, nb), base: make([]int64, n)}
	for b := range p.Buffers {
		c.held[b] = p.Buffers[b].Release < 0
		c.rigid[b] = !p.Buffers[b].External
	}
	for v := range p.Views {
		if b := p.Views[v].Buffer; c.held[b] && p.Views[v].Discard >= 0 {
			f, _ := p.Footprint(trace.Ref{Buffer: b, View: v})
			c.discarded[b].AddSet(&f)
		}
	}
	for k := range p.Ops {
		op := &p.Ops[k]
		var total int64
		var whole []bool // per entry of c.own[k]: k writes the whole buffer
		for _, u := range op.Uses {
			b := u.Ref.Buffer
			if p.Buffers[b].External {
				continue
			}
			f, exact := p.Footprint(u.Ref) // a superset when inexact: never counted
			c.uses[b] = append(c.uses[b], obUse{op: k, fp: f, exact: exact})
			if !slices.Contains(c.opBufs[k], int32(b)) {
				c.opBufs[k] = append(c.opBufs[k], int32(b))
			}
			if !exact {
				continue
			}
			i := slices.IndexFunc(c.own[k], func(o ownBytes) bool { return o.buf == b })
			if i < 0 {
				i = len(c.own[k])
				c.own[k] = append(c.own[k], ownBytes{buf: b})
				whole = append(whole, false)
			}
			if u.Access&trace.AccessWrite != 0 && u.Ref.View < 0 {
				whole[i] = true
			}
			c.own[k][i].both.AddSet(&f)
		}
		// The operands of different buffers are disjoint, but at an inplace
		// op a buffer it writes whole, first used there, may take the bytes
		// of another operand (inplace.go): count the others, or the largest
		// such buffer when more.
		var others, largest int64
		for i := range c.own[k] {
			n := c.own[k][i].both.Len()
			total += n
			if b := c.own[k][i].buf; whole[i] && c.uses[b][0].op == k {
				largest = max(largest, n)
			} else {
				others += n
			}
		}
		if op.InPlace {
			total = max(others, largest)
		}
		c.ownTotal[k] = total
		c.base[k] = -1
	}
	// A buffer an inplace op writes while reading a view that does not
	// hold its elements in its own dense order (shifted), or a buffer that
	// is not rigid, may be laid over that view's bytes (see inplace.go):
	// not rigid, and nor is what is laid over it in turn.
	for changed := true; changed; {
		changed = false
		for k := range p.Ops {
			op := &p.Ops[k]
			if !op.InPlace {
				continue
			}
			for _, w := range op.Uses {
				b := w.Ref.Buffer
				if w.Access&trace.AccessWrite == 0 || !c.rigid[b] {
					continue
				}
				for _, u := range op.Uses {
					a := u.Ref.Buffer
					if u.Access&trace.AccessRead == 0 || a == b || p.Buffers[a].External {
						continue
					}
					if l := p.Layout(u.Ref); !c.rigid[a] || !sameElements(l, shifted(p.Buffers[b].Layout, l.Offset)) {
						c.rigid[b] = false
						changed = true
						break
					}
				}
			}
		}
	}
	return c
}

// contrib returns the bytes of buffer b, other than k's own, held while k
// runs when the ops of before run before it and those of after after it,
// and leaves them in c.cut.
func (c *liveCounter) contrib(k, b int, before, after []uint64) int64 {
	c.cut.Reset()
	us := c.uses[b]
	var inA, inD bool
	for _, u := range us {
		if u.op != k && hasBit(before, u.op) {
			inA = true
		}
		if u.op != k && hasBit(after, u.op) {
			inD = true
		}
	}
	if !inA || !inD && !c.held[b] {
		return 0
	}
	c.before.Reset()
	c.after.Reset()
	for _, u := range us {
		if !u.exact {
			continue
		}
		if hasBit(before, u.op) {
			c.before.AddSet(&u.fp)
		}
		if hasBit(after, u.op) {
			c.after.AddSet(&u.fp)
		}
	}
	intersect(&c.before, &c.after, &c.cut)
	if c.held[b] {
		// Held bytes stay once used, but for those of a discarded view,
		// which go once their last user ran.
		if d := &c.discarded[b]; !d.IsEmpty() {
			c.before.RemoveSet(d)
		}
		c.cut.AddSet(&c.before)
	}
	n := c.cut.Len()
	for i := range c.own[k] {
		if o := &c.own[k][i]; o.buf == b {
			n -= overlapLen(&c.cut, &o.both)
		}
	}
	return n
}

func hasBit(row []uint64, j int) bool { return row[j/64]&(1<<(j%64)) != 0 }

// single returns the bytes held while k runs in every order (see
// OrderBound), or the hole figure when larger.
func (c *liveCounter) single(k int) int64 {
	total := c.ownTotal[k]
	holes := !c.p.Ops[k].InPlace
	var bufs []int
	for b := range c.uses {
		if len(c.uses[b]) == 0 {
			continue
		}
		total += c.contrib(k, b, c.anc.row(k), c.desc.row(k))
		if holes {
			s := &c.spans[b]
			s.Reset()
			s.AddSet(&c.cut)
			for i := range c.own[k] {
				if o := &c.own[k][i]; o.buf == b {
					s.AddSet(&o.both)
				}
			}
			if !s.IsEmpty() {
				bufs = append(bufs, b)
			}
		}
	}
	for _, b := range bufs {
		runs := c.spans[b].Runs()
		if !c.rigid[b] || len(runs) < 2 {
			continue
		}
		var gap int64
		for i := 1; i < len(runs); i++ {
			gap = max(gap, runs[i].Lo-runs[i-1].Hi)
		}
		fig := runs[len(runs)-1].Hi - runs[0].Lo
		for _, x := range bufs {
			if x == b || !c.rigid[x] {
				continue
			}
			for _, r := range c.spans[x].Runs() {
				if r.Hi-r.Lo > gap {
					fig += r.Hi - r.Lo
				}
			}
		}
		total = max(total, fig)
	}
	return total
}

// pair returns the bytes held while k runs in every order that runs j (an
// op neither before nor after k in every order) and j's ancestors before
// k: k's figure, the buffers those ops use counted again.
func (c *liveCounter) pair(k, j int, work *int) int64 {
	ak, aj := c.anc.row(k), c.anc.row(j)
	for w := range c.row {
		c.row[w] = ak[w] | aj[w]
	}
	c.row[j/64] |= 1 << (j % 64)
	*work += len(c.row)
	if c.base[k] < 0 {
		c.base[k] = c.ownTotal[k]
		for b := range c.uses {
			if len(c.uses[b]) > 0 {
				c.base[k] += c.contrib(k, b, ak, c.desc.row(k))
			}
		}
	}
	total := c.base[k]
	c.epoch++
	dk := c.desc.row(k)
	for w := range c.row {
		for x := c.row[w] &^ ak[w]; x != 0; x &= x - 1 {
			for _, b := range c.opBufs[w*64+bits.TrailingZeros64(x)] {
				if c.stamp[b] == c.epoch {
					continue
				}
				c.stamp[b] = c.epoch
				*work += 2 * len(c.uses[b])
				total += c.contrib(k, int(b), c.row, dk) - c.contrib(k, int(b), ak, dk)
			}
		}
	}
	return total
}

// intersect puts a ∩ b into out and returns it.
func intersect(a, b, out *ranges.Set) *ranges.Set {
	out.Reset()
	ar, br := a.Runs(), b.Runs()
	for i, j := 0, 0; i < len(ar) && j < len(br); {
		lo, hi := max(ar[i].Lo, br[j].Lo), min(ar[i].Hi, br[j].Hi)
		if lo < hi {
			out.Add(ranges.Range{Lo: lo, Hi: hi})
		}
		if ar[i].Hi < br[j].Hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// overlapLen returns |a ∩ b|.
func overlapLen(a, b *ranges.Set) int64 {
	var n int64
	ar, br := a.Runs(), b.Runs()
	for i, j := 0, 0; i < len(ar) && j < len(br); {
		lo, hi := max(ar[i].Lo, br[j].Lo), min(ar[i].Hi, br[j].Hi)
		if lo < hi {
			n += hi - lo
		}
		if ar[i].Hi < br[j].Hi {
			i++
		} else {
			j++
		}
	}
	return n
}
