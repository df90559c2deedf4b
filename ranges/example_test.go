package ranges_test

import (
	"fmt"

	"github.com/subarena/subarena/ranges"
)

func ExampleSet() {
	var live ranges.Set // the zero value is the empty set
	live.Add(ranges.Range{Lo: 0, Hi: 4096})
	live.Add(ranges.Range{Lo: 8192, Hi: 12288})
	live.Add(ranges.Range{Lo: 4096, Hi: 6144}) // touches [0, 4096): merged
	fmt.Println(live.String(), live.Len())

	live.Remove(ranges.Range{Lo: 1024, Hi: 2048})
	fmt.Println(live.String())
	fmt.Println(live.Contains(1500), live.ContainsRange(ranges.Range{Lo: 8192, Hi: 9000}))
	// Output:
	// {[0, 6144), [8192, 12288)} 10240
	// {[0, 1024), [2048, 6144), [8192, 12288)}
	// false true
}

func ExampleSet_Overlaps() {
	s := ranges.FromRanges(ranges.Range{Lo: 0, Hi: 4}, ranges.Range{Lo: 16, Hi: 20})
	r, ok := s.Overlaps(ranges.Range{Lo: 2, Hi: 18})
	fmt.Println(r, ok)
	_, ok = s.Overlaps(ranges.Range{Lo: 4, Hi: 16})
	fmt.Println(ok)
	// Output:
	// [2, 4) true
	// false
}

func ExampleSubtract() {
	held := ranges.FromRanges(ranges.Range{Lo: 0, Hi: 1024})
	pending := ranges.FromRanges(ranges.Range{Lo: 100, Hi: 200}, ranges.Range{Lo: 512, Hi: 600})
	free := ranges.Subtract(&held, &pending)
	fmt.Println(free.String())
	// Output: {[0, 100), [200, 512), [600, 1024)}
}

func ExampleSet_AlignOut() {
	s := ranges.FromRanges(ranges.Range{Lo: 10, Hi: 600}, ranges.Range{Lo: 1300, Hi: 1310})
	out := s.AlignOut(256) // granules touched: pinned
	in := s.AlignIn(256)   // granules fully covered
	fmt.Println(out.String(), in.String())
	// Output: {[0, 768), [1280, 1536)} {[256, 512)}
}
