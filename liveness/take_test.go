package liveness

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// bruteSafeRuns is SafeRuns' contract computed granule by granule: the
// maximal runs of fully held granules every pending user of which is
// known and safe.
func bruteSafeRuns(x *Index, safe func(sasync.Event) bool) []ranges.Range {
	var out ranges.Set
	full := x.held.AlignIn(x.granule)
	for _, c := range full.Runs() {
		for lo := c.Lo; lo < c.Hi; lo += x.granule {
			ok := true
			x.Users(ranges.Range{Lo: lo, Hi: lo + x.granule}, func(_ UserID, ev sasync.Event, unknown bool) bool {
				ok = !unknown && safe(ev)
				return ok
			})
			if ok {
				out.Add(ranges.Range{Lo: lo, Hi: lo + x.granule})
			}
		}
	}
	// Fully held granules of different held runs never touch, so the
	// union's runs are SafeRuns' runs.
	return out.Runs()
}

// bruteSafePieces is SafeRuns' contract in whole mode, piece by piece:
// the fully held granules of every piece all of whose pending users are
// known and safe, sorted by address.
func bruteSafePieces(x *Index, safe func(sasync.Event) bool) []ranges.Range {
	var out []ranges.Range
	for _, p := range x.pieces {
		ok := true
		for _, r := range p.bytes.Runs() {
			x.Users(r, func(_ UserID, ev sasync.Event, unknown bool) bool {
				ok = ok && !unknown && safe(ev)
				return ok
			})
		}
		if ok {
			in := p.bytes.AlignIn(x.granule)
			out = append(out, in.Runs()...)
		}
	}
	slices.SortFunc(out, func(a, b ranges.Range) int { return int(a.Lo - b.Lo) })
	return out
}

// TestSafeRunsAgainstBrute drives a fenced Index, in subrange and in whole
// mode, with random users, releases, completions, removals, takes and
// SafeRuns passes at random points (most taking nothing, so that what a
// pass keeps for the next is exercised), and compares every pass with
// bruteSafeRuns or bruteSafePieces.
func TestSafeRunsAgainstBrute(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	for _, mode := range []Mode{SubrangeFenced, WholeFenced} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprint(mode, "/", seed), func(t *testing.T) { safeRunsAgainstBrute(t, mode, seed, steps) })
		}
	}
}

func safeRunsAgainstBrute(t *testing.T, mode Mode, seed uint64, steps int) {
	const n, g, engines = 1024, 16, 3
	r := rand.New(rand.NewPCG(seed, 11))
	x, err := New(g, mode)
	if err != nil {
		t.Fatal(err)
	}
	var submitted, completed sasync.Clock
	var owned ranges.Set
	owned.Add(ranges.Range{Lo: 0, Hi: n})
	var users []UserID
	var unknowns []UserID
	free := func(rg ranges.Range) { owned.Add(rg) }
	for step := range steps {
		var what string
		switch op := r.IntN(12); {
		case op < 4: // a user over some bytes, owned or not
			runs := randomRuns(r, n)
			unknown := r.IntN(10) == 0
			e := r.IntN(engines)
			ev := sasync.Event{Engine: sasync.EngineID(e), Seq: submitted[e] + 1}
			submitted[e]++
			id, err := x.AddUser(ev, unknown, runs)
			if err != nil {
				t.Fatal(err)
			}
			if unknown {
				unknowns = append(unknowns, id)
			} else {
				users = append(users, id)
			}
			what = fmt.Sprintf("add %v unknown=%v %v", ev, unknown, runs)
		case op < 5: // remove a user, unknown or not yet completed
			list := &users
			if len(unknowns) > 0 && r.IntN(2) == 0 {
				list = &unknowns
			}
			if len(*list) == 0 {
				continue
			}
			i := r.IntN(len(*list))
			id := (*list)[i]
			*list = slices.Delete(*list, i, i+1)
			if err := x.RemoveUser(id, free); err != nil {
				continue // completed already
			}
			what = fmt.Sprintf("remove %d", id)
		case op < 7: // release a piece of what the program owns
			if owned.IsEmpty() {
				continue
			}
			runs := owned.Runs()
			rg := runs[r.IntN(len(runs))]
			lo := rg.Lo + int64(r.IntN(int(rg.Len())))
			hi := lo + 1 + int64(r.IntN(int(min(rg.Hi-lo, 128))))
			owned.Remove(ranges.Range{Lo: lo, Hi: hi})
			rel := ranges.FromRanges(ranges.Range{Lo: lo, Hi: hi})
			if err := x.Release(&rel, free); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("release [%d, %d)", lo, hi)
		case op < 8: // complete a prefix of one engine
			e := r.IntN(engines)
			if completed[e] == submitted[e] {
				continue
			}
			completed[e] += sasync.Seq(1 + r.IntN(int(submitted[e]-completed[e])))
			x.Complete(&completed, free)
			what = fmt.Sprintf("complete to %v", completed[:engines])
		default: // a pass for a writer at a random point; sometimes it takes
			var point sasync.Clock
			for e := range engines {
				point[e] = sasync.Seq(r.IntN(int(submitted[e]) + 1))
			}
			// Half the writers do not know what completed: a user gone
			// from the index no longer pins, whatever safe says of it.
			knows := r.IntN(2) == 0
			safe := func(ev sasync.Event) bool {
				return ev.Seq <= point[ev.Engine] || (knows && ev.Seq <= completed[ev.Engine])
			}
			got := x.SafeRuns(nil, safe)
			var want []ranges.Range
			if mode.Whole() {
				want = bruteSafePieces(x, safe)
				slices.SortFunc(got, func(a, b ranges.Range) int { return int(a.Lo - b.Lo) })
			} else {
				want = bruteSafeRuns(x, safe)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: pass at %v: SafeRuns %v, granule by granule %v", step, point[:engines], got, want)
			}
			what = fmt.Sprintf("pass at %v", point[:engines])
			if len(got) > 0 && r.IntN(3) == 0 {
				c := got[r.IntN(len(got))]
				w := ranges.Range{Lo: c.Lo, Hi: c.Lo + g*(1+int64(r.IntN(int(c.Len()/g))))}
				if _, err := x.TakeRanges([]ranges.Range{w}, free); err != nil {
					t.Fatalf("step %d: take %v of %v: %v", step, w, c, err)
				}
				owned.Add(w)
				what += fmt.Sprintf(", take %v", w)
			}
		}
		if err := x.CheckInvariants(); err != nil {
			t.Fatalf("step %d (%s): %v", step, what, err)
		}
	}
}

// TestSafeRunsBlockerGone: a pass that found held bytes pinned by a user
// the writer refused looks at them again once that user is gone, though
// the writer still refuses its event: completed (both fenced modes), or,
// in whole mode, the piece's bytes under it taken.
func TestSafeRunsBlockerGone(t *testing.T) {
	free := func(ranges.Range) {}
	buf := ranges.Range{Lo: 0, Hi: 64}
	// Refuses engine 1's ops, even completed ones: what it is told about
	// completion does not matter to the index.
	safe := func(ev sasync.Event) bool { return ev.Engine == 0 }
	for _, mode := range []Mode{SubrangeFenced, WholeFenced} {
		x, err := New(16, mode)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.AddUser(sasync.Event{Engine: 1, Seq: 1}, false, []ranges.Range{buf}); err != nil {
			t.Fatal(err)
		}
		if _, err := x.AddUser(sasync.Event{Engine: 0, Seq: 1}, false, []ranges.Range{buf}); err != nil {
			t.Fatal(err)
		}
		rel := ranges.FromRanges(buf)
		if err := x.Release(&rel, free); err != nil {
			t.Fatal(err)
		}
		if got := x.SafeRuns(nil, safe); len(got) != 0 {
			t.Fatalf("%v: pinned by the refused user, SafeRuns lists %v", mode, got)
		}
		x.Complete(&sasync.Clock{0, 1}, free)
		if got := x.SafeRuns(nil, safe); !slices.Equal(got, []ranges.Range{buf}) {
			t.Fatalf("%v: the refused user completed, SafeRuns lists %v, want %v", mode, got, buf)
		}
	}

	x, err := New(16, WholeFenced)
	if err != nil {
		t.Fatal(err)
	}
	head, tail := ranges.Range{Lo: 0, Hi: 16}, ranges.Range{Lo: 16, Hi: 64}
	if _, err := x.AddUser(sasync.Event{Engine: 1, Seq: 1}, false, []ranges.Range{head}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.AddUser(sasync.Event{Engine: 0, Seq: 1}, false, []ranges.Range{buf}); err != nil {
		t.Fatal(err)
	}
	rel := ranges.FromRanges(buf)
	if err := x.Release(&rel, free); err != nil {
		t.Fatal(err)
	}
	if got := x.SafeRuns(nil, safe); len(got) != 0 {
		t.Fatalf("whole: pinned by the refused user, SafeRuns lists %v", got)
	}
	// A writer that accepts engine 1 takes the head; the rest of the piece
	// is under engine 0's user only.
	if _, err := x.TakeRanges([]ranges.Range{head}, free); err != nil {
		t.Fatal(err)
	}
	if got := x.SafeRuns(nil, safe); !slices.Equal(got, []ranges.Range{tail}) {
		t.Fatalf("whole: the refused user's bytes taken, SafeRuns lists %v, want %v", got, tail)
	}
}

// copyEngineSafeAsks runs n steps of a compute engine handing data to a
// copy engine that nothing waits for (the shape of a copy stream read
// asynchronously): each step a buffer is written on compute, its first
// half read on copy, and released once compute has completed; then a
// compute writer asks SafeRuns what it may take. Every released half
// stays pinned by its copy reader, and a compute writer is safe for none
// of them. It returns how many times SafeRuns asked safe, in all.
func copyEngineSafeAsks(t testing.TB, mode Mode, n int) int {
	const size, g = 64, 16
	x, err := New(g, mode)
	if err != nil {
		t.Fatal(err)
	}
	free := func(ranges.Range) {}
	var point, completed sasync.Clock
	asks := 0
	safe := func(ev sasync.Event) bool {
		asks++
		return ev.Seq <= point[ev.Engine] || ev.Seq <= completed[ev.Engine]
	}
	for i := range n {
		point[0] = copyEngineStep(t, x, i, size, &completed, free)
		if got := x.SafeRuns(nil, safe); len(got) > 0 {
			t.Fatalf("step %d: a compute writer may take %v, pinned by the copy engine", i, got)
		}
	}
	want := int64(n) * size / 2 // every first half
	if mode.Whole() {
		want = int64(n) * size // every buffer
	}
	if held := x.HeldBytes(); held != want {
		t.Fatalf("%v: %d bytes held, want %d", mode, held, want)
	}
	return asks
}

// TestSafeRunsCostPerPass: bytes that stay pinned for every writer that
// asks (a copy engine's reads nothing waits for) cost a SafeRuns pass
// nothing once it has found them pinned, so n passes over n such runs ask
// safe O(n) times in all, not once per pinned run per pass (n²/2). The
// bound counts the reuse rule's calls, not time: 4 per step at two sizes
// (a scan of every held run asks n²/2 times, 1,000,000 at 2,000 steps).
func TestSafeRunsCostPerPass(t *testing.T) {
	checkCostPerStep(t, "asks of safe", copyEngineSafeAsks, SubrangeFenced, WholeFenced)
}

// BenchmarkSafeRunsCopyEngine: one step of copyEngineSafeAsks (a user on
// each engine, a completion, a release and a SafeRuns pass) per op, at a
// few sizes: ns/op stays flat as the pinned bytes grow.
func BenchmarkSafeRunsCopyEngine(b *testing.B) {
	benchCostPerStep(b, copyEngineSafeAsks, SubrangeFenced)
}
