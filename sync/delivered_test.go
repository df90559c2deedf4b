package sync

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subarena/subarena/internal/testutil"
)

// TestDelivered: a completion reads as completed as soon as Complete has
// recorded it, but as delivered only once every subscriber has returned;
// Executor.Wait returns only after that.
func TestDelivered(t *testing.T) {
	noLeaks(t)
	tl := NewTimeline()
	e0, _ := tl.AddEngine("compute", Compute)
	inSub := make(chan struct{})
	release := make(chan struct{})
	var seen atomic.Bool
	unsub := tl.Subscribe(func(Clock) {
		close(inSub)
		<-release
		seen.Store(true)
	})
	defer unsub()
	x := NewExecutor(tl)
	x.Start(context.Background())
	ev, err := x.Submit(e0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each Wait result carries whether the subscriber had returned when
	// Wait did. One Wait starts before ev completes, one after.
	type result struct {
		err     error
		subDone bool
	}
	waited := make(chan result, 2)
	wait := func() {
		err := x.Wait(ev)
		waited <- result{err, seen.Load()}
	}
	go wait()

	<-inSub // the engine's Complete has recorded ev and calls the subscriber
	go wait()
	if !tl.Completed(ev) {
		t.Fatal("not completed while its subscribers run")
	}
	if tl.Delivered(ev) {
		t.Fatal("delivered before its subscriber returned")
	}
	select { // a Wait that does not wait for delivery returns well within this
	case r := <-waited:
		t.Fatalf("Wait returned (%v) before the subscriber had seen the completion", r.err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	for range 2 {
		r := <-waited
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !r.subDone || !tl.Delivered(ev) {
			t.Fatalf("after Wait: subscriber done %v when Wait returned, delivered %v", r.subDone, tl.Delivered(ev))
		}
	}
	if !tl.Delivered(Event{}) {
		t.Error("the zero Event is not delivered")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Invariants(t, tl)
}
