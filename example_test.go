package subarena_test

import (
	"fmt"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// A fused QKV projection split into Q, K and V views: Q and K return to the
// arena as soon as the attention scores are done, while V is still being
// read by a slow copy engine.
func Example() {
	tl := sasync.NewTimeline()
	compute, _ := tl.AddEngine("compute", sasync.Compute)
	copyEng, _ := tl.AddEngine("copy", sasync.Copy)
	a, _ := subarena.New(subarena.Config{Capacity: 1 << 16, Policy: subarena.SubrangeAfterUsers, Timeline: tl})

	pt, _ := tl.Point(compute)
	qkv, _ := a.Alloc(16*1536, pt) // 16 tokens x (Q|K|V), 128 f32 each
	row := func(off int64) strided.Layout {
		return strided.Layout{Offset: off, Shape: []int64{16, 128}, Strides: []int64{1536, 4}, Elem: 4}
	}
	q, _ := qkv.View(row(0))
	k, _ := qkv.View(row(512))
	v, _ := qkv.View(row(1024))

	proj, _ := tl.Submit(compute)
	_ = a.Use(qkv.Whole(), proj, subarena.Write)
	scores, _ := tl.Submit(compute)
	_ = a.Use(q, scores, subarena.Read)
	_ = a.Use(k, scores, subarena.Read)
	offload, _ := tl.Submit(copyEng, proj)
	_ = a.Use(v, offload, subarena.Read)
	_ = a.Release(qkv)

	_ = tl.Complete(scores)
	fmt.Println("held while V is read:", a.Stats().Held)
	_ = tl.Complete(offload)
	fmt.Println("held after:", a.Stats().Held)
	// Output:
	// held while V is read: 8192
	// held after: 0
}

// NoSpaceError tells what is pinned and what to wait for.
func ExampleNoSpaceError() {
	tl := sasync.NewTimeline()
	compute, _ := tl.AddEngine("compute", sasync.Compute)
	a, _ := subarena.New(subarena.Config{Capacity: 4096, Policy: subarena.SubrangeAfterUsers, Timeline: tl})
	pt, _ := tl.Point(compute)
	b, _ := a.Alloc(4096, pt)
	ev, _ := tl.Submit(compute)
	_ = a.UseBuffer(b, ev, subarena.Read)
	_ = a.Release(b)
	pt, _ = tl.Point(compute)
	_, err := a.Alloc(1024, pt)
	fmt.Println(err)
	// Output:
	// subarena: no space for 1024 bytes: 0 free (largest 0), 4096 held, 4096 pending; completing e0#1 would free enough
}
