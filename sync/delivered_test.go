package sync

import (
	"context"
	"sync/atomic"
	"testing"
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
	waited := make(chan error)
	go func() { waited <- x.Wait(ev) }()

	<-inSub // the engine's Complete has recorded ev and calls the subscriber
	if !tl.Completed(ev) {
		t.Fatal("not completed while its subscribers run")
	}
	if tl.Delivered(ev) {
		t.Fatal("delivered before its subscriber returned")
	}
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) before the subscriber had seen the completion", err)
	default:
	}
	close(release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if !seen.Load() || !tl.Delivered(ev) {
		t.Fatalf("after Wait: subscriber done %v, delivered %v", seen.Load(), tl.Delivered(ev))
	}
	if !tl.Delivered(Event{}) {
		t.Error("the zero Event is not delivered")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tl.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
