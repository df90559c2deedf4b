package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// Dense problems.
//
// The solver works on the conflict graph: one edge per pair of items some pieces of
// which conflict (compile's buildEdges), and with several engines the Concurrent pairs
// are listed one by one first (concurrentPairsByClock). Both are as large as the number
// of conflicting pairs, and a trace can make that quadratic in its size: a copy engine
// whose reads are never synced keeps every buffer it read unordered before every later
// buffer, so all n buffers conflict pairwise (10^4 steps listed some 10^8 pairs, tens of
// GB). Such a problem has little to search anyway: what conflicts with everything is
// stacked.
//
// So before listing pairs, derive bounds how many there can be. Each piece a gets the
// time from which every piece starting later is ordered after it, orderedFrom(a): the
// pieces that start before it and after a's window ends include every piece a is
// unordered before (see orderedFrom). A piece's window stretched to orderedFrom
// intersects the window of every piece it must not share bytes with, so the pairs of
// intersecting stretched windows, counted in O(P log P), bound the conflicting pairs.
// Above densePairLimit the problem is dense: it is solved by solveDense, a sweep in
// time that places each item, its window stretched, at the lowest free offset of an
// arena (package arena) and frees it when its stretched window ends, in O(P log P)
// time and O(P) memory, and never looks at a pair. Its plan is safe for the same reason
// (every conflicting pair is live in the arena at once) and is checked as every plan
// is; its lower bound is the most bytes live at once, and the online replay's plan
// replaces it when lower.

// densePairLimit is the most conflicting piece pairs derive lets the solver list for a
// problem of the given pieces: 16 per piece and a floor of 2^18, some 100 bytes each. A
// variable so that tests can send small problems down the dense path.
var densePairLimit = func(pieces int) int64 { return 16*int64(pieces) + 1<<18 }

// dense is what derive keeps of a dense problem: when each item comes into the arena,
// and when each granule-aligned run of its bytes may leave it.
type dense struct {
	start []Time     // per item: the start of its first piece; -1 for an item without pieces
	runs  []denseRun // every item's runs, [0, Size) rounded up to the alignment, in item order
	pairs int64      // the pairs of intersecting stretched piece windows counted
}

// denseRun is bytes [lo, hi) of an item, which may leave the arena at time at: the end
// of the latest stretched window of a piece whose bytes (rounded out to the alignment)
// meet them, or just after the item's start for bytes no piece holds.
type denseRun struct {
	item   int32
	lo, hi int64
	at     Time
}

// orderedFrom returns, per piece of infos, a time from which every piece b starting then
// or later is ordered after it (every use of a happens-before every use of b), and
// which is at least the end of its window: one past the start of the last piece, among
// those starting after a's window ends, that a is unordered before.
//
// As in concurrentPairsByClock, a is unordered before b when a last op x of a has
// seq(x) > thr_b[engine(x)], the least Seen(y, engine(x)) over b's first ops y, or is
// itself a first op of b. Over the pieces by start, the suffix minima of thr_b[e] rise,
// so the pieces a's last op on engine e is unordered before end at the last one whose
// suffix minimum is below seq(x): a binary search. Cost O(P·E·log P) for P pieces and E
// engines, plus the pieces' ops.
func orderedFrom(prob *Problem, infos []pieceInfo, order *trace.Order) []Time {
	n := len(infos)
	out := make([]Time, n)
	if n == 0 {
		return out
	}
	window := func(i int) Piece { return prob.Items[infos[i].item].Pieces[infos[i].piece] }
	byStart := make([]int32, n)
	for i := range byStart {
		byStart[i] = int32(i)
		out[i] = window(i).End
	}
	slices.SortFunc(byStart, func(a, b int32) int { return cmp.Compare(window(int(a)).Start, window(int(b)).Start) })
	starts := make([]Time, n)
	for k, i := range byStart {
		starts[k] = window(int(i)).Start
	}
	nEng := len(infos[0].firstOn)
	suffix := make([]uint64, n+1)
	for e := range nEng {
		suffix[n] = ^uint64(0)
		for k := n - 1; k >= 0; k-- {
			thr := ^uint64(0)
			for _, y := range infos[byStart[k]].firstOn {
				if y >= 0 {
					thr = min(thr, uint64(order.Seen(y, e)))
				}
			}
			suffix[k] = min(suffix[k+1], thr)
		}
		for a := range infos {
			x := infos[a].lastOn[e]
			if x < 0 {
				continue
			}
			seq := uint64(order.Events[x].Seq)
			// The pieces k with suffix[k] < seq are a prefix; the last of them is
			// unordered after a.
			last := sort.Search(n, func(k int) bool { return suffix[k] >= seq }) - 1
			if last >= 0 && starts[last] >= window(a).End {
				out[a] = max(out[a], starts[last]+1)
			}
		}
	}
	// An op that is a last op of a and a first op of b never happens-before itself.
	latestFirst := map[int]Time{}
	for b := range infos {
		for _, y := range infos[b].firstOn {
			if y >= 0 {
				if t, ok := latestFirst[y]; !ok || window(b).Start > t {
					latestFirst[y] = window(b).Start
				}
			}
		}
	}
	for a := range infos {
		for _, x := range infos[a].lastOn {
			if t, ok := latestFirst[x]; x >= 0 && ok && t >= window(a).End {
				out[a] = max(out[a], t+1)
			}
		}
	}
	return out
}

// intersectingPairs counts the pairs of windows [start, end) (each non-empty) that
// intersect, in O(n log n).
func intersectingPairs(windows [][2]Time) int64 {
	starts := make([]Time, len(windows))
	ends := make([]Time, len(windows))
	for i, w := range windows {
		starts[i], ends[i] = w[0], w[1]
	}
	slices.Sort(starts)
	slices.Sort(ends)
	var pairs int64
	ended := 0
	for k, s := range starts {
		for ended < len(ends) && ends[ended] <= s {
			ended++
		}
		pairs += int64(k - ended) // earlier starts still open at s
	}
	return pairs
}

// denseCheck decides whether a multi-engine problem is dense (see the top of this
// file): it returns what solveDense needs when the pairs its pieces may conflict in
// exceed densePairLimit, nil otherwise.
func denseCheck(prob *Problem, infos []pieceInfo, order *trace.Order) *dense {
	ends := orderedFrom(prob, infos, order)
	windows := make([][2]Time, len(infos))
	for i, in := range infos {
		windows[i] = [2]Time{prob.Items[in.item].Pieces[in.piece].Start, ends[i]}
	}
	pairs := intersectingPairs(windows)
	if pairs <= densePairLimit(len(infos)) {
		return nil
	}
	// infos lists each item's pieces together, in item order.
	d := &dense{start: make([]Time, len(prob.Items)), pairs: pairs}
	for i := range d.start {
		d.start[i] = -1
	}
	g := prob.align()
	var pieces []stretched
	for k := 0; k < len(infos); {
		item := infos[k].item
		pieces = pieces[:0]
		for ; k < len(infos) && infos[k].item == item; k++ {
			pc := prob.Items[item].Pieces[infos[k].piece]
			pieces = append(pieces, stretched{lo: pc.Lo &^ (g - 1), hi: alignUp(pc.Hi, g), end: ends[k]})
			if d.start[item] < 0 || pc.Start < d.start[item] {
				d.start[item] = pc.Start
			}
		}
		d.runs = appendDenseRuns(d.runs, int32(item), alignUp(prob.Items[item].Size, g), d.start[item], pieces)
	}
	return d
}

// stretched is a piece's bytes, rounded out to the alignment, and the end of its
// stretched window.
type stretched struct {
	lo, hi int64
	end    Time
}

// appendDenseRuns appends the runs of one item of size bytes (a multiple of the
// alignment) whose pieces are given: cut at every piece's bounds, each run leaves at the
// latest end among the pieces meeting it, or at start+1 when none does. Adjacent runs
// leaving at one time are merged. Cost O(m log m) for m pieces.
func appendDenseRuns(out []denseRun, item int32, size int64, start Time, pieces []stretched) []denseRun {
	cuts := []int64{0, size}
	for _, p := range pieces {
		cuts = append(cuts, p.lo, p.hi)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	slices.SortFunc(pieces, func(a, b stretched) int { return cmp.Compare(a.lo, b.lo) })
	open := sweep.NewHeap(func(a, b stretched) bool { return a.end > b.end }) // latest end first
	next, first := 0, len(out)
	for k := 0; k+1 < len(cuts); k++ {
		lo, hi := cuts[k], cuts[k+1]
		for ; next < len(pieces) && pieces[next].lo <= lo; next++ {
			open.Push(pieces[next])
		}
		at := start + 1
		for open.Len() > 0 {
			if top := open.Min(); top.hi <= lo {
				open.Pop()
				continue
			}
			at = max(at, open.Min().end)
			break
		}
		if n := len(out); n > first && out[n-1].at == at && out[n-1].hi == lo {
			out[n-1].hi = hi
		} else {
			out = append(out, denseRun{item: item, lo: lo, hi: hi, at: at})
		}
	}
	return out
}

// solveDense places a dense problem without its conflict graph: items by start, each
// at the lowest free offset of an unbounded arena of the problem's alignment, each run
// of its bytes freed when it may leave (see the top of this file and dense).
func solveDense(prob *Problem, d *dense) (Solution, error) {
	n := len(prob.Items)
	sol := Solution{Offsets: make([]int64, n)}
	a, err := arena.New(arena.Config{Granule: prob.align(), Unbounded: true})
	if err != nil {
		return Solution{}, fmt.Errorf("%w: %w", ErrInvalidProblem, err)
	}
	var byStart []int32
	for i := range n {
		if d.start[i] >= 0 {
			byStart = append(byStart, int32(i))
		}
	}
	slices.SortStableFunc(byStart, func(x, y int32) int { return cmp.Compare(d.start[x], d.start[y]) })
	// Every run leaves after its item's start, so the runs leaving by an item's start
	// belong to items placed before it.
	runs := slices.Clone(d.runs)
	slices.SortStableFunc(runs, func(x, y denseRun) int { return cmp.Compare(x.at, y.at) })
	next := 0
	for _, i := range byStart {
		for ; next < len(runs) && runs[next].at <= d.start[i]; next++ {
			r := runs[next]
			if err := a.Free(sol.Offsets[r.item]+r.lo, r.hi-r.lo); err != nil {
				return Solution{}, fmt.Errorf("internal: dense sweep: %w", err)
			}
		}
		b, err := a.Alloc(prob.Items[i].Size)
		if err != nil {
			if errors.Is(err, arena.ErrNoSpace) || errors.Is(err, arena.ErrInvalidSize) {
				return Solution{}, fmt.Errorf("%w: item %q: %w", ErrTooLarge, prob.Items[i].Name, err)
			}
			return Solution{}, err
		}
		sol.Offsets[i] = b.Offset
		sol.Height = max(sol.Height, b.Offset+prob.Items[i].Size)
	}
	sol.LiveBound = piecesLiveBound(prob)
	sol.LowerBound = sol.LiveBound
	sol.Proven = sol.Height == sol.LowerBound
	sol.Method = fmt.Sprintf("dense sweep (%d conflicting pairs or more: no search)", d.pairs)
	return sol, nil
}

// piecesLiveBound is compile's liveBound without compiling: the most bytes of pieces
// live at one time, or the largest item if that is larger.
func piecesLiveBound(prob *Problem) int64 {
	type change struct {
		at    Time
		bytes int64
	}
	var changes []change
	var lb int64
	for _, it := range prob.Items {
		if len(it.Pieces) > 0 {
			lb = max(lb, it.Size)
		}
		for _, pc := range it.Pieces {
			changes = append(changes, change{pc.Start, pc.Bytes()}, change{pc.End, -pc.Bytes()})
		}
	}
	// Ends before starts at one time: windows are half-open.
	slices.SortFunc(changes, func(x, y change) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		return cmp.Compare(x.bytes, y.bytes)
	})
	var live int64
	for _, c := range changes {
		live += c.bytes
		lb = max(lb, live)
	}
	return lb
}
