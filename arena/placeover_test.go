package arena

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subarena/subarena/ranges"
)

// snapshot is everything PlaceOver must leave as it was.
func snapshot(a *Arena) ([]Block, Stats) {
	return a.AppendFreeRegions(nil), a.Stats()
}

// fullArena returns an arena of capacity bytes, granule 1, allocated
// whole in blocks of block bytes: block 0 at offset 0, and so on.
func fullArena(t *testing.T, capacity, block int64) *Arena {
	t.Helper()
	a := mustNew(t, Config{Capacity: capacity, Granule: 1})
	for range capacity / block {
		if _, err := a.Alloc(block); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// mustPlaceOver returns where PlaceOver puts size bytes over extra,
// failing t unless it finds a place.
func mustPlaceOver(t *testing.T, a *Arena, size int64, extra []Block) Placement {
	t.Helper()
	pl, ok, err := a.PlaceOver(size, extraOf(extra...))
	require.NoError(t, err)
	require.True(t, ok)
	return pl
}

// TestPlaceOverReusesLowestRegionWithExtra: free space and extra runs side
// by side form one region; the block goes to the start of the lowest one
// whose first bytes include an extra run.
func TestPlaceOverReusesLowestRegionWithExtra(t *testing.T) {
	a := fullArena(t, 64, 8)
	// free: [8,16) and [40,48); extra: [16,24) and [48,56).
	require.NoError(t, a.Free(8, 8))
	require.NoError(t, a.Free(40, 8))
	extra := []Block{{16, 8}, {48, 8}}
	free, st := snapshot(a)
	pl := mustPlaceOver(t, a, 12, extra)
	require.Equal(t, Placement{Block: Block{8, 12}}, pl)
	f2, st2 := snapshot(a)
	require.Equal(t, free, f2, "PlaceOver changed the free regions")
	require.Equal(t, st, st2)
	// 20 bytes do not fit [8,24) (16 bytes); [40,56) holds 16 too.
	_, ok, err := a.PlaceOver(20, extraOf(extra...))
	require.NoError(t, err)
	require.False(t, ok, "a bounded arena with no region of 20 bytes")
}

// TestPlaceOverFitKeepsSpaceBesideExtra: with no reuse possible, a free
// region beside an extra run counts at the size of the region it forms with
// it, so a tighter free region elsewhere is taken first; at equal class the
// region with the extra run wins.
func TestPlaceOverFitKeepsSpaceBesideExtra(t *testing.T) {
	a := fullArena(t, 128, 8)
	require.NoError(t, a.Free(0, 8))   // [0,8) beside the extra [8,16)
	require.NoError(t, a.Free(64, 10)) // [64,74) apart
	extra := []Block{{8, 8}}
	// A 6-byte request: [0,8) alone is tighter than [64,74), but with the
	// extra run it is [0,16): the fit takes [64,74)... unless reuse applies:
	// the first 6 bytes of [0,16) are free, so no reuse.
	pl := mustPlaceOver(t, a, 6, extra)
	require.Equal(t, int64(64), pl.Offset)
	// Without the extra run the fit takes the tighter [0,8).
	pl = mustPlaceOver(t, a, 6, nil)
	require.Equal(t, int64(0), pl.Offset)
	// Equal classes: [0,16) with the extra run, and a free [96,112).
	b := fullArena(t, 128, 8)
	require.NoError(t, b.Free(0, 8))
	require.NoError(t, b.Free(96, 16))
	pl = mustPlaceOver(t, b, 6, extra)
	require.Equal(t, int64(0), pl.Offset, "equal class: the region with the extra run")
}

// TestPlaceOverRefusesBadExtra: extra runs must be aligned, allocated,
// disjoint and in order; a bad list changes nothing.
func TestPlaceOverRefusesBadExtra(t *testing.T) {
	a := mustNew(t, Config{Capacity: 256, Granule: 16})
	_, _ = a.Alloc(128)
	free, st := snapshot(a)
	for name, extra := range map[string][]Block{
		"unaligned":   {{8, 16}},
		"free":        {{128, 16}},
		"overlapping": {{0, 32}, {16, 32}},
		"unordered":   {{32, 16}, {0, 16}},
		"empty":       {{0, 0}},
		"outside":     {{256, 16}},
	} {
		_, _, err := a.PlaceOver(16, extraOf(extra...))
		require.ErrorIs(t, err, ErrBadExtra, name)
		f2, st2 := snapshot(a)
		require.Equal(t, free, f2, name)
		require.Equal(t, st, st2, name)
	}
	_, _, err := a.PlaceOver(0, nil)
	require.ErrorIs(t, err, ErrInvalidSize)
}

// TestPlaceOverGrowsPastTopExtra: an unbounded arena whose top region holds
// an extra run places a block that fits nowhere at that region's start and
// says it must grow; GrowTo and AllocAt then take it.
func TestPlaceOverGrowsPastTopExtra(t *testing.T) {
	a := mustNew(t, Config{Capacity: 0, Granule: 8, Unbounded: true})
	_, _ = a.Alloc(32)
	b, _ := a.Alloc(16) // [32,48): the extra run at the top
	pl := mustPlaceOver(t, a, 40, []Block{b})
	require.Equal(t, Placement{Block: Block{32, 40}, Grow: true}, pl)
	require.NoError(t, a.GrowTo(pl.End()))
	require.Equal(t, int64(72), a.Capacity())
	require.NoError(t, a.AllocAt(48, 24), "the grown bytes are free")
	require.NoError(t, a.CheckInvariants())
	// With no extra run the top is the capacity.
	pl = mustPlaceOver(t, a, 8, nil)
	require.Equal(t, Placement{Block: Block{72, 8}, Grow: true}, pl)
}

// TestGrowTo: it extends an unbounded arena's top free region and refuses a
// bounded arena or an unaligned end, changing nothing.
func TestGrowTo(t *testing.T) {
	a := mustNew(t, Config{Capacity: 64, Granule: 16, Unbounded: true})
	_, _ = a.Alloc(32)
	require.NoError(t, a.GrowTo(128))
	require.Equal(t, []Block{{32, 96}}, a.AppendFreeRegions(nil), "the old top region and the new bytes are one")
	require.NoError(t, a.GrowTo(64), "below the capacity: nothing to do")
	require.Equal(t, int64(128), a.Capacity())
	require.ErrorIs(t, a.GrowTo(136), ErrMisaligned)
	require.NoError(t, a.CheckInvariants())
	b := mustNew(t, Config{Capacity: 64, Granule: 16})
	require.ErrorIs(t, b.GrowTo(128), ErrInvalidConfig)
	require.Equal(t, int64(64), b.Capacity())
}

// TestPlaceOverProperty: on random arenas with random extra runs, the
// answer never changes the arena, covers only free bytes and extra runs,
// is reuse at the lowest qualifying region exactly when one exists (brute
// force), and can be committed with AllocAt on its free parts.
func TestPlaceOverProperty(t *testing.T) {
	var reused, grown, refused, fitted int
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		const g = 4
		capacity := int64(32+rng.IntN(64)) * g
		a := mustNew(t, Config{Capacity: capacity, Granule: g, Unbounded: seed%3 == 0, Fit: Fit(rng.IntN(2))})
		var blocks []Block
		for {
			b, err := a.Alloc(int64(1+rng.IntN(6)) * g)
			if err != nil || b.End() > capacity {
				if err == nil {
					_ = a.Free(b.Offset, b.Size)
				}
				break
			}
			blocks = append(blocks, b)
		}
		capacity = a.Capacity() // an unbounded arena may have grown
		var extra []Block
		for _, b := range blocks {
			switch rng.IntN(3) {
			case 0:
				require.NoError(t, a.Free(b.Offset, b.Size))
			case 1:
				extra = append(extra, b)
			}
		}
		free, st := snapshot(a)
		size := int64(1 + rng.IntN(12*g))
		pl, ok, err := a.PlaceOver(size, extraOf(extra...))
		require.NoError(t, err, "seed %d", seed)
		f2, st2 := snapshot(a)
		require.Equal(t, free, f2, "seed %d: PlaceOver changed the arena", seed)
		require.Equal(t, st, st2)
		n := (size + g - 1) / g * g
		// Brute force over the byte map: usable = free or extra.
		usable := make([]bool, capacity)
		isExtra := make([]bool, capacity)
		for _, f := range free {
			for i := f.Offset; i < f.End(); i++ {
				usable[i] = true
			}
		}
		for _, x := range extra {
			for i := x.Offset; i < x.End(); i++ {
				usable[i], isExtra[i] = true, true
			}
		}
		wantReuse := int64(-1)
		for lo := int64(0); lo < capacity && wantReuse < 0; {
			if !usable[lo] {
				lo++
				continue
			}
			hi := lo
			for hi < capacity && usable[hi] {
				hi++
			}
			if hi-lo >= n && slices.Contains(isExtra[lo:lo+n], true) {
				wantReuse = lo
			}
			lo = hi
		}
		switch {
		case wantReuse >= 0:
			reused++
		case !ok:
			refused++
		case pl.Grow:
			grown++
		default:
			fitted++
		}
		if wantReuse >= 0 {
			require.True(t, ok, "seed %d", seed)
			require.Equal(t, Placement{Block: Block{wantReuse, n}}, pl, "seed %d: reuse", seed)
		}
		if !ok {
			require.False(t, a.Unbounded(), "seed %d: an unbounded arena always places", seed)
			for _, f := range free {
				require.Less(t, f.Size, n, "seed %d: a free region fits", seed)
			}
			continue
		}
		require.Equal(t, n, pl.Size)
		end := min(pl.End(), capacity)
		require.Equal(t, pl.End() > capacity, pl.Grow, "seed %d", seed)
		for i := pl.Offset; i < end; i++ {
			require.True(t, usable[i], "seed %d: byte %d of %v is neither free nor extra", seed, i, pl)
		}
		if pl.Grow {
			require.NoError(t, a.GrowTo(pl.End()))
		}
		// Commit the free parts.
		for i := pl.Offset; i < pl.End(); {
			if i < capacity && isExtra[i] {
				i++
				continue
			}
			j := i
			for j < pl.End() && (j >= capacity || !isExtra[j]) {
				j++
			}
			require.NoError(t, a.AllocAt(i, j-i), "seed %d: commit [%d, %d)", seed, i, j)
			i = j
		}
		require.NoError(t, a.CheckInvariants(), "seed %d", seed)
	}
	t.Logf("%d reused, %d fitted, %d grown, %d refused", reused, fitted, grown, refused)
	require.Positive(t, reused)
	require.Positive(t, fitted)
	require.Positive(t, grown)
	require.Positive(t, refused)
}

// extraOf returns blocks as the byte ranges PlaceOver takes.
func extraOf(blocks ...Block) []ranges.Range {
	var rs []ranges.Range
	for _, b := range blocks {
		rs = append(rs, ranges.Range{Lo: b.Offset, Hi: b.End()})
	}
	return rs
}
