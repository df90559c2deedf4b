package subarena

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// snapshot renders every piece of Allocator state a bad call could touch.
func snapshot(a *Allocator) string {
	st := a.Stats()
	a.mu.Lock()
	defer a.mu.Unlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "%+v\n", st)
	fmt.Fprintf(&sb, "held %v\n", a.idx.Held().Runs())
	fmt.Fprintf(&sb, "free %v\n", a.ar.AppendFreeRegions(nil))
	for _, b := range a.buffers {
		fmt.Fprintf(&sb, "buf %d live %v claims %d released %v\n", b.id, b.live.Runs(), len(b.openClaims()), b.isReleased())
	}
	fmt.Fprintf(&sb, "tl completed %v\n", a.tl.CompletedClock())
	for e := range a.tl.NumEngines() {
		fmt.Fprintf(&sb, "tl submitted %d: %d\n", e, a.tl.Submitted(sasync.EngineID(e)))
	}
	return sb.String()
}

// badFixture is an Allocator with a little of everything: a live buffer
// with a pending reader, a released buffer still pinned, a claimed buffer.
type badFixture struct {
	tl                   *sasync.Timeline
	a                    *Allocator
	comp, cp             sasync.EngineID
	live, gone, claimed  *Buffer
	half, otherAllocView *View
	pendingRead, done    sasync.Event
	claim                *Claim
}

func newBadFixture(t *testing.T) *badFixture {
	t.Helper()
	f := &badFixture{tl: sasync.NewTimeline()}
	f.comp, _ = f.tl.AddEngine("compute", sasync.Compute)
	f.cp, _ = f.tl.AddEngine("copy", sasync.Copy)
	a, err := New(Config{Capacity: 1 << 16, Granule: 256, Timeline: f.tl})
	if err != nil {
		t.Fatal(err)
	}
	f.a = a
	pt, _ := f.tl.Point(f.comp)
	f.live, _ = a.Alloc(4096, pt)
	f.gone, _ = a.Alloc(4096, pt)
	f.claimed, _ = a.Alloc(1024, pt)
	f.half, err = f.live.View(strided.Bytes(0, 2048))
	if err != nil {
		t.Fatal(err)
	}
	f.pendingRead, _ = f.tl.Submit(f.cp)
	if err := a.Use(f.half, f.pendingRead, Read); err != nil {
		t.Fatal(err)
	}
	f.done, _ = f.tl.Submit(f.comp)
	if err := f.tl.Complete(f.done); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(f.gone); err != nil {
		t.Fatal(err)
	}
	if f.claim, err = a.Claim(f.claimed.Whole()); err != nil {
		t.Fatal(err)
	}
	otl := sasync.NewTimeline()
	oe, _ := otl.AddEngine("compute", sasync.Compute)
	other, _ := New(Config{Capacity: 1 << 12, Timeline: otl})
	opt, _ := otl.Point(oe)
	ob, _ := other.Alloc(256, opt)
	f.otherAllocView = ob.Whole()
	return f
}

// TestBadInput: each bad call returns an error matching its sentinel and
// leaves the Allocator exactly as it was.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		want error
		call func(f *badFixture) error
	}{
		{"alloc zero", ErrInvalidSize, func(f *badFixture) error { _, err := f.a.Alloc(0, sasync.Point{}); return err }},
		{"alloc negative", ErrInvalidSize, func(f *badFixture) error { _, err := f.a.Alloc(-5, sasync.Point{}); return err }},
		{"alloc overflowing", ErrInvalidSize, func(f *badFixture) error { _, err := f.a.Alloc(math.MaxInt64, sasync.Point{}); return err }},
		{"alloc beyond capacity", ErrNoSpace, func(f *badFixture) error { _, err := f.a.Alloc(1<<20, sasync.Point{}); return err }},
		{"alloc at unknown engine", ErrUnknownEngine, func(f *badFixture) error { _, err := f.a.Alloc(256, sasync.Point{Engine: 9}); return err }},
		{"alloc at forged point", ErrInvalidPoint, func(f *badFixture) error {
			pt, _ := f.tl.Point(f.comp)
			pt.Clock[f.cp] = 1000 // the copy engine has submitted one op
			_, err := f.a.Alloc(256, pt)
			return err
		}},
		{"alloc at point claiming an unawaited op", ErrInvalidPoint, func(f *badFixture) error {
			pt, _ := f.tl.Point(f.comp)
			pt.Clock[f.cp] = 1 // submitted, but compute does not wait for it
			_, err := f.a.Alloc(256, pt)
			return err
		}},
		{"alloc at point of another timeline", ErrInvalidPoint, func(f *badFixture) error {
			otl := sasync.NewTimeline()
			oe, _ := otl.AddEngine("compute", sasync.Compute)
			for range 5 {
				_, _ = otl.Submit(oe)
			}
			pt, _ := otl.Point(oe)
			_, err := f.a.Alloc(256, pt)
			return err
		}},
		{"use buffer nil", ErrForeign, func(f *badFixture) error { return f.a.UseBuffer(nil, f.pendingRead, Read) }},
		{"view of zero buffer", ErrForeign, func(f *badFixture) error { _, err := (&Buffer{}).View(strided.Bytes(0, 1)); return err }},
		{"dense of zero buffer", ErrForeign, func(f *badFixture) error { _, err := (&Buffer{}).Dense(0, []int64{1}, 1); return err }},
		{"view of zero view", ErrForeign, func(f *badFixture) error { _, err := (&View{}).View(strided.Bytes(0, 1)); return err }},
		{"slice of nil view", ErrForeign, func(f *badFixture) error { var v *View; _, err := v.Slice(0, 0, 1, 1); return err }},
		{"split of zero view", ErrForeign, func(f *badFixture) error { _, err := (&View{}).Split(0, 1); return err }},
		{"use zero view", ErrForeign, func(f *badFixture) error { return f.a.Use(&View{}, f.pendingRead, Read) }},
		{"use buffer zero", ErrForeign, func(f *badFixture) error { return f.a.UseBuffer(&Buffer{}, f.pendingRead, Read) }},
		{"commit zero claim", ErrForeign, func(f *badFixture) error { return (&Claim{}).Commit() }},
		{"abandon zero claim", ErrForeign, func(f *badFixture) error { return (&Claim{}).Abandon() }},
		{"commit nil claim", ErrForeign, func(f *badFixture) error { var c *Claim; return c.Commit() }},
		{"activate zero reservation", ErrForeign, func(f *badFixture) error { return (&Reservation{}).Activate(f.pendingRead, Read) }},
		{"cancel zero reservation", ErrForeign, func(f *badFixture) error { return (&Reservation{}).Cancel() }},
		{"release twice", ErrDoubleRelease, func(f *badFixture) error { return f.a.Release(f.gone) }},
		{"release claimed", ErrClaimed, func(f *badFixture) error { return f.a.Release(f.claimed) }},
		{"release foreign", ErrForeign, func(f *badFixture) error { return f.a.Release(f.otherAllocView.Buffer()) }},
		{"release nil", ErrForeign, func(f *badFixture) error { return f.a.Release(nil) }},
		{"use after release", ErrReleased, func(f *badFixture) error { return f.a.Use(f.gone.Whole(), f.done, Read) }},
		{"use unknown event", ErrUnknownEvent, func(f *badFixture) error {
			return f.a.Use(f.half, sasync.Event{Engine: f.comp, Seq: 99}, Read)
		}},
		{"use event on unknown engine", ErrUnknownEvent, func(f *badFixture) error {
			return f.a.Use(f.half, sasync.Event{Engine: 12, Seq: 1}, Read)
		}},
		{"use zero event", ErrUnknownEvent, func(f *badFixture) error { return f.a.Use(f.half, sasync.Event{}, Read) }},
		{"use bad access", ErrInvalidAccess, func(f *badFixture) error { return f.a.Use(f.half, f.pendingRead, 7) }},
		{"use claimed", ErrClaimed, func(f *badFixture) error { return f.a.Use(f.claimed.Whole(), f.pendingRead, Read) }},
		{"use foreign view", ErrForeign, func(f *badFixture) error { return f.a.Use(f.otherAllocView, f.pendingRead, Read) }},
		{"use nil view", ErrForeign, func(f *badFixture) error { return f.a.Use(nil, f.pendingRead, Read) }},
		{"view out of bounds", ErrOutOfBounds, func(f *badFixture) error { _, err := f.live.View(strided.Bytes(4000, 200)); return err }},
		{"view negative stride out of bounds", ErrOutOfBounds, func(f *badFixture) error {
			_, err := f.live.View(strided.Layout{Offset: 8, Shape: []int64{4}, Strides: []int64{-4}, Elem: 4})
			return err
		}},
		{"view shape/stride mismatch", ErrInvalidLayout, func(f *badFixture) error {
			_, err := f.live.View(strided.Layout{Shape: []int64{4, 4}, Strides: []int64{4}, Elem: 4})
			return err
		}},
		{"view zero elem", ErrInvalidLayout, func(f *badFixture) error {
			_, err := f.live.View(strided.Layout{Shape: []int64{4}, Strides: []int64{4}, Elem: 0})
			return err
		}},
		{"view overflowing stride", strided.ErrOverflow, func(f *badFixture) error {
			_, err := f.live.View(strided.Layout{Shape: []int64{4}, Strides: []int64{math.MaxInt64 / 2}, Elem: 4})
			return err
		}},
		{"view negative dim", ErrInvalidLayout, func(f *badFixture) error {
			_, err := f.live.View(strided.Layout{Shape: []int64{-4}, Strides: []int64{4}, Elem: 4})
			return err
		}},
		{"reshape not expressible", strided.ErrNotExpressible, func(f *badFixture) error {
			v, err := f.live.Dense(0, []int64{8, 8}, 4)
			if err != nil {
				return err
			}
			v, err = v.Transpose(0, 1)
			if err != nil {
				return err
			}
			_, err = v.Reshape(64)
			return err
		}},
		{"donate view someone else reads", ErrPending, func(f *badFixture) error {
			ev, _ := f.tl.Submit(f.comp)
			_, err := f.a.Donate(f.half, ev)
			return err
		}},
		{"donate strided view", ErrNotDense, func(f *badFixture) error {
			v, _ := f.live.View(strided.Layout{Offset: 2048, Shape: []int64{4}, Strides: []int64{512}, Elem: 4})
			ev, _ := f.tl.Submit(f.comp)
			_, err := f.a.Donate(v, ev)
			return err
		}},
		{"claim pinned buffer", ErrPending, func(f *badFixture) error { _, err := f.a.Claim(f.half); return err }},
		{"claim twice", ErrClaimed, func(f *badFixture) error { _, err := f.a.Claim(f.claimed.Whole()); return err }},
		{"complete twice", sasync.ErrAlreadyCompleted, func(f *badFixture) error { return f.tl.Complete(f.done) }},
		{"complete unsubmitted", ErrUnknownEvent, func(f *badFixture) error {
			return f.tl.Complete(sasync.Event{Engine: f.cp, Seq: 50})
		}},
		{"discard released", ErrDoubleRelease, func(f *badFixture) error { return f.a.Discard(f.gone.Whole()) }},
		{"config granule not power of two", ErrInvalidConfig, func(f *badFixture) error {
			_, err := New(Config{Capacity: 3000, Granule: 300, Timeline: f.tl})
			return err
		}},
		{"config misaligned capacity", ErrInvalidConfig, func(f *badFixture) error {
			_, err := New(Config{Capacity: 1000, Granule: 256, Timeline: f.tl})
			return err
		}},
		{"config no timeline", ErrInvalidConfig, func(f *badFixture) error { _, err := New(Config{Capacity: 1024}); return err }},
		{"config bad policy", ErrInvalidConfig, func(f *badFixture) error {
			_, err := New(Config{Capacity: 1024, Policy: 42, Timeline: f.tl})
			return err
		}},
		{"config short backing", ErrInvalidConfig, func(f *badFixture) error {
			_, err := New(Config{Capacity: 1024, Backing: make([]byte, 10), Timeline: f.tl})
			return err
		}},
	}
	if len(cases) < 25 {
		t.Fatalf("only %d bad calls", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newBadFixture(t)
			before := snapshot(f.a)
			err := c.call(f)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			// Calls that submit an event to set up the case change the
			// Timeline, not the Allocator: compare with that excluded.
			after := snapshot(f.a)
			if stripSubmitted(before) != stripSubmitted(after) {
				t.Fatalf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if err := f.a.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func stripSubmitted(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "tl submitted") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
