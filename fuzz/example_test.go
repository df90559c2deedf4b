package fuzz_test

import (
	"fmt"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/fuzz"
)

// Every interleaving of the view-chain scenario: a reader behind three
// views on a second engine. IR-order release is caught reading another
// buffer's bytes; the safe policies never are.
func ExampleExplore() {
	sc := fuzz.Scenarios()[0]
	for _, pol := range subarena.Policies() {
		r := fuzz.Explore(sc.Program, pol, fuzz.ExploreOptions{})
		fmt.Printf("%-21v caught=%v\n", pol, r.WrongReads > 0)
	}
	// Output:
	// ir-order              caught=true
	// whole-after-users     caught=false
	// whole-fenced          caught=false
	// subrange-after-users  caught=false
	// subrange-fenced       caught=false
}

// A program written by hand: a producer on one engine, a consumer of a
// transposed view on another, then the bytes reused.
func ExampleBuilder() {
	b := fuzz.NewBuilder("transpose", 2, 128, 16)
	x := b.Alloc(64, 0)
	p := b.Op(0, nil, fuzz.W(b.Whole(x)))
	xt := b.Permute(b.Dense(x, 0, []int64{8, 8}, 1), 1, 0)
	y := b.Alloc(64, 1)
	b.Op(1, []int{p}, fuzz.R(xt), fuzz.W(b.Whole(y)))
	b.Release(x)
	z := b.Alloc(64, 0)
	b.Op(0, nil, fuzz.W(b.Whole(z)))
	b.Release(y)
	b.Release(z)
	prog, err := b.Program()
	if err != nil {
		fmt.Println(err)
		return
	}
	r := fuzz.Explore(prog, subarena.SubrangeFenced, fuzz.ExploreOptions{})
	fmt.Println("complete:", r.Complete, "failures:", r.Failures())
	// Output: complete: true failures: 0
}

// A random program, run once with a random interleaving under the default
// policy.
func ExampleRun() {
	p := fuzz.Generate(fuzz.NewRand(42), fuzz.DefaultConfig())
	if err := p.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	r := fuzz.Run(p, subarena.SubrangeFenced, fuzz.NewRandomScheduler(fuzz.NewRand(7)))
	fmt.Println("ops:", len(p.Ops), "failure:", r.Failure)
	// Output: ops: 24 failure: <nil>
}
