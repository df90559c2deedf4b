package arena_test

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena/arena"
)

// A fused projection's output is released in pieces as each part dies; the
// pieces coalesce with each other and with the free space around them.
func Example() {
	a, err := arena.New(arena.Config{Capacity: 1 << 20}) // 1 MiB, 256 B granules
	if err != nil {
		panic(err)
	}
	qkv, _ := a.Alloc(3 * 4096) // Q, K and V views of one buffer
	out, _ := a.Alloc(4096)
	fmt.Println("qkv", qkv, "out", out)

	_ = a.Free(qkv.Offset+4096, 4096) // K dies first
	_ = a.Free(qkv.Offset, 4096)      // then Q: joins K's piece
	fmt.Println(a.AppendFreeRegions(nil))

	_ = a.Free(qkv.Offset+8192, 4096) // V: the whole buffer is back
	fmt.Println(a.AppendFreeRegions(nil))
	// Output:
	// qkv {0 12288} out {12288 4096}
	// [{0 8192} {16384 1032192}]
	// [{0 12288} {16384 1032192}]
}

// Freeing a byte twice is an error the caller can test for, and it leaves
// the arena as it was.
func ExampleArena_Free() {
	a, _ := arena.New(arena.Config{Capacity: 64 << 10})
	b, _ := a.Alloc(8192)
	fmt.Println(a.Free(b.Offset, 4096))
	err := a.Free(b.Offset, 8192) // the first half is already free
	fmt.Println(errors.Is(err, arena.ErrNotAllocated), a.IsAllocated(b.Offset+4096, 4096))
	// Output:
	// <nil>
	// true true
}

// In planning mode the arena grows instead of failing; the high-water mark
// is the size a plan needs.
func ExampleConfig_unbounded() {
	a, _ := arena.New(arena.Config{Unbounded: true})
	x, _ := a.Alloc(1 << 20)
	y, _ := a.Alloc(2 << 20)
	_ = a.Free(x.Offset, x.Size)
	z, _ := a.Alloc(512 << 10) // reuses x's space
	fmt.Println(y.Offset, z.Offset, a.Stats().HighWater)
	// Output:
	// 1048576 0 3145728
}

// A bounded arena reports why it cannot serve a request.
func ExampleNoSpaceError() {
	a, _ := arena.New(arena.Config{Capacity: 4096})
	_, _ = a.Alloc(1024)
	_, err := a.Alloc(4096)
	var ns *arena.NoSpaceError
	fmt.Println(errors.As(err, &ns), ns.Requested, ns.TotalFree, ns.LargestFree)
	// Output:
	// true 4096 3072 3072
}

// Backing memory makes blocks real bytes; Bytes caps each slice at its
// block's end.
func ExampleArena_Bytes() {
	a, _ := arena.New(arena.Config{Capacity: 4096, Backing: make([]byte, 4096)})
	b, _ := a.Alloc(100)
	buf := a.Bytes(b)
	fmt.Println(len(buf), cap(buf))
	// Output:
	// 256 256
}

func ExampleArena_Stats() {
	a, _ := arena.New(arena.Config{Capacity: 16 << 10})
	var blocks []arena.Block
	for range 4 {
		b, _ := a.Alloc(4096)
		blocks = append(blocks, b)
	}
	_ = a.Free(blocks[0].Offset, 4096)
	_ = a.Free(blocks[2].Offset, 4096)
	s := a.Stats()
	fmt.Println(s.InUse, s.Free, s.LargestFree, s.FreeRegions, s.Fragmentation)
	// Output:
	// 8192 8192 4096 2 0.5
}

func ExampleParseFit() {
	f, err := arena.ParseFit("fast")
	fmt.Println(f, err)
	// Output:
	// fast <nil>
}
