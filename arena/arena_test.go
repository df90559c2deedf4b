package arena

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena/internal/testutil"
)

// mustNew returns a new arena of cfg, failing t unless New accepts cfg
// and the new arena's invariants hold.
func mustNew(t testing.TB, cfg Config) *Arena {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Invariants(t, a)
	return a
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"zero capacity bounded", Config{}},
		{"negative capacity", Config{Capacity: -256}},
		{"granule not power of two", Config{Capacity: 3 * 96, Granule: 96}},
		{"negative granule", Config{Capacity: 1024, Granule: -256}},
		{"granule too large", Config{Capacity: 1 << 31, Granule: 1 << 31}},
		{"capacity not granule multiple", Config{Capacity: 1000}},
		{"capacity beyond limit", Config{Capacity: (maxGranules + 1) * 16, Granule: 16}},
		{"short backing", Config{Capacity: 1024, Backing: make([]byte, 1023)}},
		{"backing with unbounded", Config{Unbounded: true, Backing: make([]byte, 1024)}},
		{"unknown fit", Config{Capacity: 1024, Fit: 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := New(c.cfg)
			if !errors.Is(err, ErrInvalidConfig) || a != nil {
				t.Fatalf("New(%+v) = %v, %v", c.cfg, a, err)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	a := mustNew(t, Config{Capacity: 4096, Granule: 64, Backing: make([]byte, 5000)})
	if a.Granule() != 64 || a.Capacity() != 4096 || a.Fit() != FitLean || a.Unbounded() {
		t.Fatalf("granule %d capacity %d fit %v unbounded %v", a.Granule(), a.Capacity(), a.Fit(), a.Unbounded())
	}
	s := a.Stats()
	if s.Free != 4096 || s.LargestFree != 4096 || s.FreeRegions != 1 || s.Fragmentation != 0 {
		t.Fatalf("fresh stats %+v", s)
	}
	u := mustNew(t, Config{Unbounded: true, Fit: FitFast})
	if u.Granule() != DefaultGranule || u.Capacity() != 0 || u.Stats().FreeRegions != 0 || u.Fit() != FitFast {
		t.Fatalf("unbounded: %+v", u.Stats())
	}
	testutil.Invariants(t, a)
	testutil.Invariants(t, u)
}

func TestAllocRoundsAndPlacesLow(t *testing.T) {
	for _, fit := range []Fit{FitFast, FitLean} {
		a := mustNew(t, Config{Capacity: 16 * 256, Fit: fit})
		want := []Block{{0, 256}, {256, 512}, {768, 256}, {1024, 1024}}
		for i, size := range []int64{1, 257, 256, 1000} {
			b, err := a.Alloc(size)
			if err != nil || b != want[i] {
				t.Fatalf("%v: Alloc(%d) = %+v, %v; want %+v", fit, size, b, err, want[i])
			}
			testutil.Invariants(t, a)
		}
		if s := a.Stats(); s.InUse != 2048 || s.HighWater != 2048 || s.PeakInUse != 2048 {
			t.Fatalf("%v: stats %+v", fit, s)
		}
	}
}

func TestFreeSubrangesCoalesce(t *testing.T) {
	a := mustNew(t, Config{Capacity: 8 * 256})
	b, _ := a.Alloc(8 * 256)
	// Free the middle, then the pieces either side: the arena must end as
	// one region.
	steps := []struct {
		off, size int64
		regions   int
	}{
		{3 * 256, 2 * 256, 1}, // [3,5)
		{6 * 256, 256, 2},     // [6,7): no neighbour
		{5 * 256, 256, 1},     // [5,6): joins both
		{0, 256, 2},           // [0,1)
		{7 * 256, 256, 2},     // [7,8): extends the right one at the top
		{256, 2 * 256, 1},     // [1,3): joins everything
	}
	for _, s := range steps {
		if err := a.Free(b.Offset+s.off, s.size); err != nil {
			t.Fatalf("Free(%d, %d): %v", s.off, s.size, err)
		}
		testutil.Invariants(t, a)
		if got := a.Stats().FreeRegions; got != s.regions {
			t.Fatalf("after Free(%d, %d): %d regions, want %d", s.off, s.size, got, s.regions)
		}
	}
	if s := a.Stats(); s.InUse != 0 || s.LargestFree != 2048 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFreeAcrossAdjacentBlocks(t *testing.T) {
	a := mustNew(t, Config{Capacity: 8 * 256})
	x, _ := a.Alloc(2 * 256)
	y, _ := a.Alloc(2 * 256)
	if x.End() != y.Offset {
		t.Fatalf("blocks %+v %+v not adjacent", x, y)
	}
	if err := a.Free(x.Offset+256, 2*256); err != nil { // last granule of x, first of y
		t.Fatal(err)
	}
	testutil.Invariants(t, a)
	if !a.IsAllocated(x.Offset, 256) || a.IsAllocated(x.Offset, 512) || !a.IsAllocated(y.End()-256, 256) {
		t.Fatal("IsAllocated disagrees with the pieces left")
	}
}

func TestErrorsLeaveStateUnchanged(t *testing.T) {
	a := mustNew(t, Config{Capacity: 8 * 256})
	b, _ := a.Alloc(4 * 256)
	_ = a.Free(256, 256) // a hole inside b
	before := a.AppendFreeRegions(nil)
	stats := a.Stats()
	cases := []struct {
		name      string
		off, size int64
		want      error
	}{
		{"double free of the hole", 256, 256, ErrNotAllocated},
		{"range over the hole", 0, 3 * 256, ErrNotAllocated},
		{"range into free space above", b.End() - 256, 2 * 256, ErrNotAllocated},
		{"free space only", 6 * 256, 256, ErrNotAllocated},
		{"misaligned offset", 1, 256, ErrMisaligned},
		{"misaligned size", 0, 255, ErrMisaligned},
		{"negative offset", -256, 256, ErrOutOfRange},
		{"past capacity", 8 * 256, 256, ErrOutOfRange},
		{"overflowing end", 1 << 62, 1 << 62, ErrOutOfRange},
		{"zero size", 0, 0, ErrInvalidSize},
		{"negative size", 0, -256, ErrInvalidSize},
	}
	for _, c := range cases {
		err := a.Free(c.off, c.size)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: Free(%d, %d) = %v, want %v", c.name, c.off, c.size, err, c.want)
		}
		if got := a.AppendFreeRegions(nil); len(got) != len(before) || a.Stats() != stats {
			t.Fatalf("%s: state changed", c.name)
		}
	}
	for _, size := range []int64{0, -1, 1 << 62} {
		if _, err := a.Alloc(size); !errors.Is(err, ErrInvalidSize) {
			t.Fatalf("Alloc(%d) = %v", size, err)
		}
	}
	testutil.Invariants(t, a)
}

func TestNoSpaceCarriesFigures(t *testing.T) {
	a := mustNew(t, Config{Capacity: 8 * 256})
	b, _ := a.Alloc(8 * 256)
	_ = a.Free(b.Offset, 256)
	_ = a.Free(b.Offset+4*256, 2*256)
	_, err := a.Alloc(3 * 256)
	var ns *NoSpaceError
	if !errors.Is(err, ErrNoSpace) || !errors.As(err, &ns) {
		t.Fatalf("got %v", err)
	}
	if ns.Requested != 768 || ns.TotalFree != 768 || ns.LargestFree != 512 {
		t.Fatalf("figures %+v", ns)
	}
	for _, s := range []string{"768", "512"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("message %q lacks %s", err, s)
		}
	}
	testutil.Invariants(t, a)
}

func TestAllocFindsTheOnlyFittingRegionDeepInItsClass(t *testing.T) {
	// Many regions of one mixed class, all too small but the last linked:
	// Alloc must still find it rather than fail.
	for _, fit := range []Fit{FitFast, FitLean} {
		const g = 64
		a := mustNew(t, Config{Capacity: 4096 * g, Granule: g, Fit: fit})
		big, _ := a.Alloc(4096 * g)
		// Free regions of 33 granules (class of 33..33: mixed for 34)
		// separated by one allocated granule, then one of 34.
		var off int64
		for i := 0; i < 40; i++ {
			_ = a.Free(big.Offset+off, 33*g)
			off += 34 * g
		}
		_ = a.Free(big.Offset+off, 34*g)
		testutil.Invariants(t, a)
		b, err := a.Alloc(34 * g)
		if err != nil || b.Offset != off {
			t.Fatalf("%v: Alloc = %+v, %v; want offset %d", fit, b, err, off)
		}
		testutil.Invariants(t, a)
	}
}

func TestUnboundedGrowsAtTheTop(t *testing.T) {
	a := mustNew(t, Config{Unbounded: true})
	x, _ := a.Alloc(1000) // [0, 1024)
	y, _ := a.Alloc(256)  // [1024, 1280)
	if x.Offset != 0 || y.Offset != 1024 || a.Capacity() != 1280 {
		t.Fatalf("x %+v y %+v capacity %d", x, y, a.Capacity())
	}
	_ = a.Free(y.Offset, y.Size) // the top is free: the next growth starts there
	z, _ := a.Alloc(4096)
	if z.Offset != 1024 || a.Capacity() != 1024+4096 || a.Stats().HighWater != a.Capacity() {
		t.Fatalf("z %+v capacity %d stats %+v", z, a.Capacity(), a.Stats())
	}
	_ = a.Free(x.Offset, x.Size)
	w, _ := a.Alloc(512) // fits in the freed hole: no growth
	if w.Offset != 0 || a.Capacity() != 5120 {
		t.Fatalf("w %+v capacity %d", w, a.Capacity())
	}
	testutil.Invariants(t, a)
	// Grow across many buckets and bitmap levels.
	for i := 0; i < 300; i++ {
		if _, err := a.Alloc(64 * 256 * int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Invariants(t, a)
	a.Reset()
	if a.Capacity() != 0 || a.Stats() != (Stats{}) {
		t.Fatalf("after reset: capacity %d stats %+v", a.Capacity(), a.Stats())
	}
	testutil.Invariants(t, a)
}

func TestUnboundedLimit(t *testing.T) {
	a := mustNew(t, Config{Unbounded: true, Granule: 1 << 30})
	if _, err := a.Alloc(1); err != nil {
		t.Fatal(err)
	}
	// maxGranules more granules on top of the first would pass the limit:
	// refused without growing.
	if _, err := a.Alloc(maxGranules << 30); !errors.Is(err, ErrInvalidSize) {
		t.Fatalf("growth past the limit: %v", err)
	}
	if _, err := a.Alloc(maxGranules<<30 + 1); !errors.Is(err, ErrInvalidSize) {
		t.Fatalf("request past the limit: %v", err)
	}
	if a.Capacity() != 1<<30 {
		t.Fatalf("capacity %d", a.Capacity())
	}
	testutil.Invariants(t, a)
}

func TestBytes(t *testing.T) {
	mem := make([]byte, 4096)
	a := mustNew(t, Config{Capacity: 4096, Backing: mem})
	b, _ := a.Alloc(300)
	s := a.Bytes(b)
	if len(s) != 512 || cap(s) != 512 || &s[0] != &mem[0] {
		t.Fatalf("len %d cap %d", len(s), cap(s))
	}
	if a.Bytes(Block{Offset: 4000, Size: 200}) != nil || a.Bytes(Block{Offset: -1, Size: 1}) != nil {
		t.Fatal("out-of-range Bytes not nil")
	}
	if mustNew(t, Config{Capacity: 4096}).Bytes(b) != nil {
		t.Fatal("Bytes without backing not nil")
	}
}

func TestResetBounded(t *testing.T) {
	a := mustNew(t, Config{Capacity: 64 * 256})
	for i := 0; i < 10; i++ {
		_, _ = a.Alloc(int64(i+1) * 256)
	}
	a.Reset()
	testutil.Invariants(t, a)
	if s := a.Stats(); s.Free != 64*256 || s.FreeRegions != 1 || s.HighWater != 0 || s.PeakInUse != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFitNames(t *testing.T) {
	for _, f := range []Fit{FitDefault, FitFast, FitLean} {
		g, err := ParseFit(f.String())
		if err != nil || g != f {
			t.Fatalf("ParseFit(%q) = %v, %v", f.String(), g, err)
		}
	}
	if g, err := ParseFit(""); err != nil || g != FitDefault {
		t.Fatalf(`ParseFit("") = %v, %v`, g, err)
	}
	if _, err := ParseFit("best"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("ParseFit(best) = %v", err)
	}
	if s := Fit(7).String(); s != "Fit(7)" {
		t.Fatal(s)
	}
}

func TestClasses(t *testing.T) {
	prev := classOf(1)
	for n := int64(1); n < 1<<20; n++ {
		c := classOf(n)
		if c < prev || c > prev+1 {
			t.Fatalf("classOf(%d) = %d after %d: not monotone by steps of one", n, c, prev)
		}
		if lo := classLow(c); lo > n || classLow(c+1) <= n {
			t.Fatalf("n %d in class %d = [%d, %d)", n, c, lo, classLow(c+1))
		}
		if u := classUp(n); classLow(u) < n || (u > 0 && classLow(u-1) >= n) {
			t.Fatalf("classUp(%d) = %d with low %d", n, u, classLow(u))
		}
		prev = c
	}
	// Beyond 2^20 granules: the bounds of every octave and random sizes.
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		e := 20 + i%12
		n := int64(1)<<e + int64(i%3) - 1 // 2^e-1, 2^e, 2^e+1
		if i&1 != 0 {
			n = 1<<20 + r.Int64N(maxGranules-1<<20)
		}
		c := classOf(n)
		if lo := classLow(c); lo > n || classLow(c+1) <= n {
			t.Fatalf("n %d in class %d = [%d, %d)", n, c, lo, classLow(c+1))
		}
		if u := classUp(n); classLow(u) < n || classLow(u-1) >= n {
			t.Fatalf("classUp(%d) = %d with low %d", n, u, classLow(u))
		}
	}
	if c := classOf(maxGranules); c >= numClasses || classLow(c) != maxGranules {
		t.Fatalf("classOf(max) = %d of %d", c, numClasses)
	}
	// Width of a class is at most 1/32 of its lower bound.
	for c := 1 << classBits; c < classOf(maxGranules); c++ {
		if w := classLow(c+1) - classLow(c); w*(1<<classBits) > classLow(c) {
			t.Fatalf("class %d width %d for low %d", c, w, classLow(c))
		}
	}
}

// randomToggles drives a bit structure and its reference ref through steps
// pseudo-random steps (a linear congruential generator from seed): each
// step draws x and, from x>>33 mod n, a bit k; x's bit 32 says set, else
// clear if set, done on both the structure (set, clear) and ref. probe(i,
// x) then compares the structure's queries with ref.
func randomToggles(seed uint64, steps int, n int64, ref *[]bool, set, clear func(k int64), probe func(i int, x uint64)) {
	x := seed
	for i := 0; i < steps; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		k := int64(x>>33) % n
		if x>>32&1 == 0 {
			set(k)
			(*ref)[k] = true
		} else if (*ref)[k] {
			clear(k)
			(*ref)[k] = false
		}
		probe(i, x)
	}
}

// firstSet returns the first index at or after from whose ref entry is
// set, or -1.
func firstSet(ref []bool, from int64) int64 {
	for k := max(from, 0); k < int64(len(ref)); k++ {
		if ref[k] {
			return k
		}
	}
	return -1
}

func TestClassSet(t *testing.T) {
	var s classSet
	ref := make([]bool, numClasses)
	randomToggles(7, 20000, numClasses, &ref,
		func(c int64) { s.add(int(c)) }, func(c int64) { s.remove(int(c)) },
		func(_ int, x uint64) {
			q := int(x>>20) % (numClasses + 2)
			if got, want := s.first(q), firstSet(ref, int64(q)); got != int(want) {
				t.Fatalf("first(%d) = %d, want %d", q, got, want)
			}
			last := -1
			for c := numClasses - 1; c >= 0; c-- {
				if ref[c] {
					last = c
					break
				}
			}
			if s.last() != last {
				t.Fatalf("last = %d, want %d", s.last(), last)
			}
		})
}

func TestTailBits(t *testing.T) {
	for _, n := range []int64{1, 64, 65, 4096, 4097, 300000} {
		var b tailBits
		b.reset(n)
		ref := make([]bool, b.size())
		randomToggles(uint64(n), 3000, n, &ref, b.set, b.clear, func(i int, x uint64) {
			q := int64(x>>14) % (n + 1)
			if got, want := b.next(q), firstSet(ref, q); got != want {
				t.Fatalf("n %d: next(%d) = %d, want %d", n, q, got, want)
			}
			// nextAfterWord(j): the first set bit from word j+1 on.
			j := uint64(q) >> 6
			if got, want := b.nextAfterWord(j), firstSet(ref, int64(j+1)<<6); got != want {
				t.Fatalf("n %d: nextAfterWord(%d) = %d, want %d", n, j, got, want)
			}
			if i%500 == 0 {
				b.grow(b.size() + 1)
				ref = append(ref, make([]bool, b.size()-int64(len(ref)))...)
			}
		})
	}
}

// TestStatsDoesNotWalk: Stats costs O(1) whatever the number of free
// regions. With 20,000 free regions of one size, only the first Stats
// looks at them; allocations that take some of those regions, frees that
// make larger ones, and Stats after each walk nothing. Once the last
// region of the largest size goes, one walk of the highest class finds the
// next largest.
func TestStatsDoesNotWalk(t *testing.T) {
	const n = 20000
	a, err := New(Config{Capacity: 2 * n * 256, Granule: 256})
	require.NoError(t, err)
	blocks := make([]Block, 2*n)
	for i := range blocks {
		blocks[i], err = a.Alloc(256)
		require.NoError(t, err)
	}
	for i := 0; i < len(blocks); i += 2 {
		require.NoError(t, a.Free(blocks[i].Offset, blocks[i].Size))
	}
	st := a.Stats()
	require.Equal(t, n, st.FreeRegions)
	require.Equal(t, int64(256), st.LargestFree)
	walked := a.walked
	require.LessOrEqual(t, walked, int64(n))
	for i := 0; i < 100; i++ {
		b, err := a.Alloc(256) // takes one of the largest regions
		require.NoError(t, err)
		require.Equal(t, int64(256), a.Stats().LargestFree)
		blocks[2*i] = b
	}
	// Free an allocated block between two free regions: three join.
	mid := int64(-1)
	for i := 1; i < len(blocks)-1 && mid < 0; i += 2 {
		_, l := a.FreeRegionAt(blocks[i].Offset - 256)
		_, r := a.FreeRegionAt(blocks[i].Offset + 256)
		if l && r {
			mid = blocks[i].Offset
		}
	}
	require.GreaterOrEqual(t, mid, int64(0))
	require.NoError(t, a.Free(mid, 256))
	require.Equal(t, int64(768), a.Stats().LargestFree)
	require.Equal(t, walked, a.walked, "Stats walked free regions while the largest was known")
	require.NoError(t, a.CheckInvariants())

	// The only 768-byte region goes: the next Stats walks once.
	_, err = a.Alloc(512)
	require.NoError(t, err)
	require.Equal(t, int64(256), a.Stats().LargestFree)
	walked = a.walked
	require.Equal(t, int64(256), a.Stats().LargestFree)
	require.Equal(t, walked, a.walked)
	require.NoError(t, a.CheckInvariants())
}
