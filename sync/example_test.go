package sync_test

import (
	"context"
	"errors"
	"fmt"

	sasync "github.com/subarena/subarena/sync"
)

// A compute engine produces a tensor that a copy engine offloads; the copy
// waits for the producer, so the producer happens-before the copy, and
// completing the copy completes the producer too.
func ExampleTimeline() {
	t := sasync.NewTimeline()
	compute, _ := t.AddEngine("compute", sasync.Compute)
	dma, _ := t.AddEngine("copy", sasync.Copy)

	proj, _ := t.Submit(compute)      // e0#1
	offload, _ := t.Submit(dma, proj) // e1#1, waits for proj
	scores, _ := t.Submit(compute)    // e0#2, after proj on its engine
	unrelated, _ := t.Submit(dma)     // e1#2, after offload only
	hb, _ := t.HappensBefore(proj, offload)
	fmt.Println("proj before offload:", hb)
	hb, _ = t.HappensBefore(offload, scores)
	fmt.Println("offload before scores:", hb)
	hb, _ = t.HappensBefore(scores, unrelated)
	fmt.Println("scores before unrelated:", hb)

	_ = t.Complete(offload)
	fmt.Println("proj completed:", t.Completed(proj))
	fmt.Println("completed clock:", t.CompletedClock().String())
	// Output:
	// proj before offload: true
	// offload before scores: false
	// scores before unrelated: false
	// proj completed: true
	// completed clock: {e0:1 e1:1}
}

// Bytes read by an op on the copy engine are released with a fence. A
// writer on the compute engine may take them at once only if the reader
// happens-before its point; otherwise it must wait for the reader to
// complete.
func ExampleTimeline_SafeFor() {
	t := sasync.NewTimeline()
	compute, _ := t.AddEngine("compute", sasync.Compute)
	dma, _ := t.AddEngine("copy", sasync.Copy)

	reader, _ := t.Submit(dma)
	var fence sasync.Clock
	fence.Observe(reader)

	p, _ := t.Point(compute)
	fmt.Println("safe before ordering:", t.SafeFor(&fence, p))

	_, _ = t.Submit(compute, reader) // the next compute op waits for the reader
	p, _ = t.Point(compute)
	fmt.Println("safe after a wait:", t.SafeFor(&fence, p))
	// Output:
	// safe before ordering: false
	// safe after a wait: true
}

// The Executor runs real functions in Timeline order: the copy runs only
// after the producer, whatever the goroutine scheduling.
func ExampleExecutor() {
	t := sasync.NewTimeline()
	compute, _ := t.AddEngine("compute", sasync.Compute)
	dma, _ := t.AddEngine("copy", sasync.Copy)

	x := sasync.NewExecutor(t)
	x.Start(context.Background())

	var tensor []float32
	var offloaded []float32
	produce, _ := x.Submit(compute, nil, func(context.Context) error {
		tensor = []float32{1, 2, 3}
		return nil
	})
	offload, _ := x.Submit(dma, []sasync.Event{produce}, func(context.Context) error {
		offloaded = append([]float32(nil), tensor...)
		return nil
	})
	if err := x.Wait(offload); err != nil {
		fmt.Println(err)
	}
	fmt.Println(offloaded)
	fmt.Println(x.Close())
	// Output:
	// [1 2 3]
	// <nil>
}

// A point covers the engine's last op and what that op waited for, but not
// the waits of ops submitted later: an allocation made for the next op
// cannot rely on them.
func ExampleTimeline_Point() {
	t := sasync.NewTimeline()
	compute, _ := t.AddEngine("compute", sasync.Compute)
	dma, _ := t.AddEngine("copy", sasync.Copy)

	upload, _ := t.Submit(dma)
	early, _ := t.Point(compute)
	_, _ = t.Submit(compute, upload)
	late, _ := t.Point(compute)
	fmt.Println("early point covers upload:", t.HappensBeforePoint(upload, early))
	fmt.Println("late point covers upload:", t.HappensBeforePoint(upload, late))
	fmt.Println("late point:", late.Clock)
	// Output:
	// early point covers upload: false
	// late point covers upload: true
	// late point: {e0:1 e1:1}
}

// A long-running program forgets completed history now and then, which
// keeps memory bounded without changing any completion or safety answer.
func ExampleTimeline_Forget() {
	t := sasync.NewTimeline()
	compute, _ := t.AddEngine("compute", sasync.Compute)
	var last sasync.Event
	for range 2000 {
		last, _ = t.Submit(compute)
		_ = t.Complete(last)
	}
	fmt.Println("released clocks:", t.Forget())
	fmt.Println("forgotten up to:", t.Forgotten(compute))
	_, err := t.EventClock(sasync.Event{Engine: compute, Seq: 1})
	fmt.Println(errors.Is(err, sasync.ErrForgotten))
	fmt.Println("still completed:", t.Completed(sasync.Event{Engine: compute, Seq: 1}))
	// Output:
	// released clocks: 1536
	// forgotten up to: 1999
	// true
	// still completed: true
}
