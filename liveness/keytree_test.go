package liveness

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rdleal/intervalst/interval"
	"github.com/stretchr/testify/require"

	"github.com/subarena/subarena/internal/invariants"
)

// TestKeyTreeAgainstIntervalst drives the key tree and an intervalst tree
// (closed intervals [lo, hi-1]) with the same random inserts and deletes,
// checks the tree's invariants after every mutation, and compares every
// overlap query, key by key.
func TestKeyTreeAgainstIntervalst(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var kt keyTree
		ref := interval.NewSearchTreeWithOptions[*group](cmp.Compare[int64], interval.TreeWithIntervalPoint())
		keys := map[[2]int64]*group{}
		span := int64(8 + rng.IntN(200))
		for step := range 600 {
			lo := rng.Int64N(span)
			hi := lo + 1 + rng.Int64N(span/4+1)
			k := [2]int64{lo, hi}
			switch g, ok := keys[k]; {
			case ok && rng.IntN(3) > 0:
				require.True(t, kt.Delete(lo, hi), "seed %d step %d: delete %v", seed, step, k)
				require.NoError(t, ref.Delete(lo, hi-1))
				delete(keys, k)
				_ = g
			case !ok:
				g := &group{lo: lo, hi: hi}
				kt.Insert(lo, hi, g)
				require.NoError(t, ref.Insert(lo, hi-1, g))
				keys[k] = g
			default:
				require.False(t, kt.Delete(lo+span, hi+span), "deleting an absent key")
			}
			require.NoError(t, kt.check(), "seed %d step %d", seed, step)
			require.Equal(t, len(keys), kt.Len())
			qlo := rng.Int64N(span + 4)
			qhi := qlo + rng.Int64N(span/3+2)
			// Then queries near the first, which the hint it leaves may
			// serve, and one anywhere.
			for q := range 4 {
				if q > 0 {
					qlo += rng.Int64N(5) - 2
					qhi = qlo + rng.Int64N(span/3+2)
				}
				if q == 3 {
					qlo = rng.Int64N(span + 4)
					qhi = qlo + rng.Int64N(span/3+2)
				}
				var got []*group
				kt.Overlapping(qlo, qhi, func(g *group) bool { got = append(got, g); return true })
				var want []*group
				if qhi > qlo {
					want, _ = ref.AllIntersections(qlo, qhi-1)
				}
				order := func(a, b *group) int {
					return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.hi, b.hi))
				}
				require.True(t, slices.IsSortedFunc(got, order), "seed %d step %d: overlaps not in key order", seed, step)
				slices.SortFunc(want, order)
				require.Equal(t, want, got, "seed %d step %d query %d: overlaps of [%d, %d)", seed, step, q, qlo, qhi)
				require.NoError(t, kt.check(), "seed %d step %d query %d: the hint", seed, step, q)
			}
		}
		n := 0
		kt.Each(func(*group) bool { n++; return true })
		require.Equal(t, len(keys), n)
	}
}

// TestKeyTreeStopsEarly: Overlapping and Each stop at the first false.
func TestKeyTreeStopsEarly(t *testing.T) {
	var kt keyTree
	for i := range int64(10) {
		kt.Insert(i*10, i*10+15, &group{lo: i * 10, hi: i*10 + 15})
	}
	calls := 0
	done := kt.Overlapping(0, 100, func(*group) bool { calls++; return calls < 3 })
	require.False(t, done)
	require.Equal(t, 3, calls)
	calls = 0
	kt.Each(func(*group) bool { calls++; return false })
	require.Equal(t, 1, calls)
	require.True(t, kt.Overlapping(5, 5, func(*group) bool { t.Fatal("empty query visited a key"); return true }))
}

// TestKeyTreeReusesNodes: deleted nodes are reused, so a tree whose keys
// come and go stops growing.
func TestKeyTreeReusesNodes(t *testing.T) {
	var kt keyTree
	for round := range int64(100) {
		for i := range int64(8) {
			kt.Insert(round*100+i, round*100+i+1, &group{lo: round*100 + i, hi: round*100 + i + 1})
		}
		for i := range int64(8) {
			require.True(t, kt.Delete(round*100+i, round*100+i+1))
		}
	}
	require.Equal(t, 0, kt.Len())
	require.LessOrEqual(t, len(kt.nodes), 9, "8 keys at a time need 8 nodes and the sentinel")
	if invariants.Enabled {
		return // the invariant checks every mutator runs allocate
	}
	allocs := testing.AllocsPerRun(100, func() {
		kt.Insert(5, 9, &group{lo: 5, hi: 9})
		kt.Delete(5, 9)
	})
	require.LessOrEqual(t, allocs, 1.0, "only the test's own group may allocate")
}

// TestKeyTreeRememberedKeys checks the keys a query leaves behind: a
// narrower query in the same shape reports exactly what a walk would, a
// query that fn nests inside another is not mistaken for the outer one's,
// and a change of the keys forgets them.
func TestKeyTreeRememberedKeys(t *testing.T) {
	var kt keyTree
	mk := func(lo, hi int64) *group {
		g := &group{lo: lo, hi: hi}
		kt.Insert(lo, hi, g)
		return g
	}
	for i := range int64(64) { // keys elsewhere, so that a walk is a walk
		mk(i*1000, i*1000+10)
	}
	a, b := mk(100_000, 104_096), mk(100_000, 102_048)
	c := mk(103_000, 103_100)
	query := func(lo, hi int64) []*group {
		var out []*group
		kt.Overlapping(lo, hi, func(g *group) bool { out = append(out, g); return true })
		return out
	}
	require.Equal(t, []*group{b, a, c}, query(100_000, 104_096))
	_, ok := kt.remembered(100_000, 102_048)
	require.True(t, ok, "a narrower query is answered from the keys the first one found")
	require.Equal(t, []*group{b, a}, query(100_000, 102_048))
	require.Equal(t, []*group{a, c}, query(102_048, 104_000))
	_, ok = kt.remembered(99_000, 102_048)
	require.False(t, ok, "a query reaching beyond the first one's bounds walks")
	require.NoError(t, kt.check())

	// A query inside fn replaces what the outer walk was collecting: the
	// outer one is not remembered, the inner one is.
	kt.Insert(200_000, 200_010, &group{lo: 200_000, hi: 200_010}) // a new shape: nothing remembered
	_, ok = kt.remembered(100_000, 102_048)
	require.False(t, ok, "an insert forgets the remembered keys")
	var inner []*group
	kt.Overlapping(100_000, 104_096, func(g *group) bool {
		if g == b {
			inner = query(0, 20)
		}
		return true
	})
	require.Len(t, inner, 1)
	_, ok = kt.remembered(100_000, 104_096)
	require.False(t, ok, "the outer query of a nested pair is not remembered")
	got, ok := kt.remembered(0, 20)
	require.True(t, ok, "the inner query is")
	require.Equal(t, inner, got)
	require.NoError(t, kt.check())

	// A query that stopped early saw only some keys: not remembered.
	kt.Delete(200_000, 200_010)
	kt.Overlapping(100_000, 104_096, func(*group) bool { return false })
	_, ok = kt.remembered(100_000, 104_096)
	require.False(t, ok, "a query fn stopped is not remembered")
}
