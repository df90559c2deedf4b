package subarena

import (
	"testing"

	"github.com/subarena/subarena/arena"
	sasync "github.com/subarena/subarena/sync"
)

// placeFixture is an Allocator with a compute and a copy engine over
// 24 KiB, and six 4 KiB buffers laid out at 0, 4K, ..., 20K.
type placeFixture struct {
	t                *testing.T
	a                *Allocator
	tl               *sasync.Timeline
	compute, copyEng sasync.EngineID
	bufs             [6]*Buffer
}

const kib = 1024

func newPlaceFixture(t *testing.T, pol Policy, fit arena.Fit) *placeFixture {
	t.Helper()
	f := &placeFixture{t: t, tl: sasync.NewTimeline()}
	f.compute, _ = f.tl.AddEngine("compute", sasync.Compute)
	f.copyEng, _ = f.tl.AddEngine("copy", sasync.Copy)
	a, err := New(Config{Capacity: 24 * kib, Granule: 256, Policy: pol, Fit: fit, Timeline: f.tl})
	if err != nil {
		t.Fatal(err)
	}
	f.a = a
	for i := range f.bufs {
		f.bufs[i] = f.alloc(4*kib, f.compute)
		if got := f.bufs[i].Offset(); got != int64(i)*4*kib {
			t.Fatalf("buffer %d at %d", i, got)
		}
	}
	return f
}

func (f *placeFixture) alloc(size int64, e sasync.EngineID) *Buffer {
	f.t.Helper()
	pt, err := f.tl.Point(e)
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := f.a.Alloc(size, pt)
	if err != nil {
		f.t.Fatal(err)
	}
	f.check()
	return b
}

// pin gives buffer i a pending writer on engine e and releases it.
func (f *placeFixture) pin(i int, e sasync.EngineID) {
	f.t.Helper()
	ev, err := f.tl.Submit(e)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.a.UseBuffer(f.bufs[i], ev, Write); err != nil {
		f.t.Fatal(err)
	}
	f.release(i)
}

func (f *placeFixture) release(i int) {
	f.t.Helper()
	if err := f.a.Release(f.bufs[i]); err != nil {
		f.t.Fatal(err)
	}
	f.check()
}

func (f *placeFixture) check() {
	f.t.Helper()
	if err := f.a.CheckInvariants(); err != nil {
		f.t.Fatal(err)
	}
}

// Under the fenced policies a new buffer takes held bytes that are safe for
// its point before clean bytes, at the lowest address where it fits and
// reaches them, whatever the arena's fit would have chosen.
func TestPlaceReusesHeldBytesFirst(t *testing.T) {
	for _, pol := range []Policy{SubrangeFenced, WholeFenced} {
		for _, fit := range []arena.Fit{arena.FitFast, arena.FitLean} {
			t.Run(pol.String()+"/"+fit.String(), func(t *testing.T) {
				t.Run("before lower clean space", func(t *testing.T) {
					f := newPlaceFixture(t, pol, fit)
					f.pin(2, f.compute) // held at [8K, 12K), safe for compute
					f.release(0)        // clean at [0, 4K): an exact fit, lower
					b := f.alloc(4*kib, f.compute)
					if b.Offset() != 8*kib || b.residual == nil {
						t.Fatalf("placed at %d (fenced %v), want 8192 over the held bytes", b.Offset(), b.residual != nil)
					}
					if st := f.a.Stats(); st.Held != 0 {
						t.Fatalf("held %d bytes after the reuse", st.Held)
					}
				})
				t.Run("with the clean space beside it", func(t *testing.T) {
					f := newPlaceFixture(t, pol, fit)
					f.pin(3, f.compute) // held at [12K, 16K)
					f.release(4)        // clean at [16K, 20K)
					f.release(0)
					f.release(1) // clean at [0, 8K): an exact fit, lower
					b := f.alloc(8*kib, f.compute)
					if b.Offset() != 12*kib || b.residual == nil {
						t.Fatalf("placed at %d (fenced %v), want 12288: held [12K, 16K) and clean [16K, 20K)", b.Offset(), b.residual != nil)
					}
				})
				t.Run("not bytes unsafe for the point", func(t *testing.T) {
					f := newPlaceFixture(t, pol, fit)
					f.pin(2, f.copyEng) // held, its writer not ordered before compute
					f.release(0)
					b := f.alloc(4*kib, f.compute)
					if b.Offset() != 0 || b.residual != nil {
						t.Fatalf("placed at %d (fenced %v), want clean 0", b.Offset(), b.residual != nil)
					}
					if st := f.a.Stats(); st.Held != 4*kib {
						t.Fatalf("held %d bytes, want 4096", st.Held)
					}
				})
				t.Run("not a block that cannot reach them", func(t *testing.T) {
					f := newPlaceFixture(t, pol, fit)
					f.pin(2, f.compute) // held at [8K, 12K)
					f.release(0)
					f.release(1) // clean [0, 8K): with the held run, one region [0, 12K)
					b := f.alloc(4*kib, f.compute)
					if b.Offset() != 0 || b.residual != nil {
						t.Fatalf("placed at %d (fenced %v), want 0: the region's first 4K are clean", b.Offset(), b.residual != nil)
					}
					if st := f.a.Stats(); st.Held != 4*kib {
						t.Fatalf("held %d bytes, want 4096", st.Held)
					}
				})
			})
		}
	}
}
