package bench_test

import (
	"fmt"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
)

// W1 on the arena: fill to 6,000 live blocks, then churn. The trace hash
// proves the sizes and victims are the specified ones.
func ExampleChurn() {
	a, _ := arena.New(arena.Config{Capacity: bench.ChurnCapacity})
	c := bench.NewChurn(bench.Churn6k, a)
	c.Fill()
	fmt.Printf("%016x\n", c.Trace)
	_ = c.Step(1000)
	r := c.Result()
	fmt.Printf("%016x %d live, %d failures\n", r.Trace, r.LiveEnd, r.Fail1+r.Fail2)
	// Output:
	// a9a26274aacf4de5
	// 31275231cecfde23 6000 live, 0 failures
}

// W2 packs perfectly: the high-water mark is one step's 64 tensors.
func ExampleLIFO() {
	a, _ := arena.New(arena.Config{Capacity: bench.LIFOCapacity})
	l := bench.NewLIFO(a)
	_ = l.Run(64 * 100)
	fmt.Println(l.HighWater == bench.LIFOStepBytes, l.Fails)
	// Output:
	// true 0
}

func ExampleChurnSize() {
	g := bench.NewSplitMix64(42)
	fmt.Println(bench.ChurnSize(g.Next()), bench.ChurnSize(g.Next()))
	// Output:
	// 512 733952
}

// FirstFit places every request at the lowest address that fits.
func ExampleFirstFit() {
	f, _ := bench.NewFirstFit(4096, 256)
	x, _ := f.Alloc(1024)
	y, _ := f.Alloc(256)
	_ = f.Free(x.Offset, x.Size)
	z, _ := f.Alloc(512)
	fmt.Println(x, y, z, f.AppendFreeRegions(nil))
	// Output:
	// {0 1024} {1024 256} {0 512} [{512 512} {1280 2816}]
}
