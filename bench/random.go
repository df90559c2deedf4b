package bench

import (
	"fmt"

	"github.com/subarena/subarena/trace"
)

// RandomConfig shapes workload 5, random programs.
type RandomConfig struct {
	// Ops is the number of op steps (other steps come in between).
	Ops int
	// Engines is how many engines ops spread over (1 to 8).
	Engines int
	// MaxLive bounds the buffers live at once; sizes are drawn log-uniformly
	// in [Granule, MaxSize] on the granule grid.
	MaxLive int
	MaxSize int64
	// WaitPercent is the chance an op waits for a random earlier op of
	// another engine; SyncPercent the chance a step is a host sync.
	WaitPercent, SyncPercent int64
	// Programs concatenated into one trace, each from its own seed
	// (Seed, Seed+1, ...); every program frees all it allocates.
	Programs int
	Seed     uint64
}

// RandomSmall is a quick setting: 4 programs of 150 ops on 3 engines.
var RandomSmall = RandomConfig{Ops: 150, Engines: 3, MaxLive: 12, MaxSize: 64 << 10, WaitPercent: 30,
	SyncPercent: 3, Programs: 4, Seed: 42}

// RandomLarge is 8 programs of 600 ops on 3 engines.
var RandomLarge = RandomConfig{Ops: 600, Engines: 3, MaxLive: 24, MaxSize: 1 << 20, WaitPercent: 30,
	SyncPercent: 3, Programs: 8, Seed: 42}

func (c RandomConfig) validate() error {
	if c.Ops <= 0 || c.Ops > 1<<20 || c.Engines <= 0 || c.Engines > 8 || c.MaxLive <= 0 || c.MaxLive > 1<<12 ||
		c.MaxSize < trace.DefaultGranule || c.MaxSize > 1<<34 || c.WaitPercent < 0 || c.WaitPercent > 100 ||
		c.SyncPercent < 0 || c.SyncPercent > 100 || c.Programs <= 0 || c.Programs > 1<<10 {
		return fmt.Errorf("%w: random config %+v", ErrInvalidWorkload, c)
	}
	return nil
}

// randBuf is a live buffer of a random program: its views are dense
// row-major sub-blocks, each recorded so views of views can be taken.
type randBuf struct {
	name  string
	size  int64
	views []randView
	dead  bool // a view was discarded: no name of it may be used again
}

// randView is a view [rows × cols] bytes with row stride stride, at off
// bytes from its buffer's first byte.
type randView struct {
	name                    string
	off, rows, cols, stride int64
}

// Random is workload 5: random programs. Each allocates buffers of random
// sizes, takes random views (contiguous ranges and strided 2-D blocks,
// and views of those), submits ops on random engines that read and write
// random live names and sometimes wait for another engine, syncs now and
// then, discards views, and releases buffers in random order. The effect
// of every policy on such programs is whatever it is: nothing in them is
// arranged to favour one.
func Random(cfg RandomConfig) (*trace.Trace, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	engines := make([]string, cfg.Engines)
	for i := range engines {
		engines[i] = fmt.Sprintf("e%d", i)
	}
	b := newBuilder("random", cfg.Seed, engines...)
	b.external("ext", 1<<20)
	for prog := 0; prog < cfg.Programs; prog++ {
		b.rng = NewSplitMix64(cfg.Seed + uint64(prog))
		randomProgram(b, cfg, fmt.Sprintf("r%d.", prog))
	}
	return b.finish()
}

func randomProgram(b *builder, cfg RandomConfig, prefix string) {
	g := int64(trace.DefaultGranule)
	var live []*randBuf
	var ops []struct{ name, engine string }
	nBuf, nView := 0, 0
	pickEngine := func() string { return b.t.Engines[b.intn(int64(len(b.t.Engines)))] }
	randSize := func() int64 {
		// Log-uniform over [g, MaxSize] on the granule grid, sometimes off the grid.
		octaves := int64(1)
		for g<<octaves <= cfg.MaxSize {
			octaves++
		}
		lo := g << b.intn(octaves)
		s := lo + b.intn(lo)
		if b.intn(4) == 0 {
			s += 1 + b.intn(g-1)
		}
		return min(max(s, 1), cfg.MaxSize)
	}
	waits := func(engine string) []string {
		if len(ops) == 0 || b.intn(100) >= cfg.WaitPercent {
			return nil
		}
		o := ops[len(ops)-1-int(b.intn(int64(min(len(ops), 16))))]
		if o.engine == engine {
			return nil
		}
		return []string{o.name}
	}
	// names returns up to k random usable names (buffers or views).
	names := func(k int) []string {
		var out []string
		seen := map[string]bool{}
		for range k {
			var usable []*randBuf
			for _, rb := range live {
				if !rb.dead {
					usable = append(usable, rb)
				}
			}
			if len(usable) == 0 {
				break
			}
			rb := usable[b.intn(int64(len(usable)))]
			n := rb.name
			if len(rb.views) > 0 && b.intn(3) > 0 {
				n = rb.views[b.intn(int64(len(rb.views)))].name
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		return out
	}
	submit := func(engine string, reads, writes []string) {
		name := fmt.Sprintf("%sop%d", prefix, len(ops))
		b.op(name, engine, float64(1+b.intn(20)), opSpec{reads: reads, writes: writes, waits: waits(engine)})
		ops = append(ops, struct{ name, engine string }{name, engine})
	}
	for len(ops) < cfg.Ops {
		r := b.intn(100)
		switch {
		case len(live) == 0 || (r < 30 && len(live) < cfg.MaxLive):
			rb := &randBuf{name: fmt.Sprintf("%sb%d", prefix, nBuf), size: randSize()}
			nBuf++
			e := pickEngine()
			b.alloc(rb.name, rb.size, e)
			reads := names(int(b.intn(3)))
			live = append(live, rb)
			submit(e, reads, []string{rb.name})
		case r < 50:
			rb := live[b.intn(int64(len(live)))]
			if rb.dead {
				continue
			}
			v := randView{name: fmt.Sprintf("%sv%d", prefix, nView)}
			nView++
			of, base := rb.name, randView{rows: 1, cols: rb.size, stride: rb.size}
			if len(rb.views) > 0 && b.intn(3) == 0 {
				base = rb.views[b.intn(int64(len(rb.views)))]
				of = base.name
			}
			// A sub-block of base: rows [r0, r0+nr), bytes [c0, c0+nc) of each.
			r0 := b.intn(base.rows)
			nr := 1 + b.intn(base.rows-r0)
			c0 := b.intn(base.cols)
			nc := 1 + b.intn(base.cols-c0)
			if nr == 1 && b.intn(2) == 0 && nc >= 2 {
				// Split the run into a 2-D block of its own.
				w := 1 + b.intn(nc/2)
				nr, nc = nc/w, w
				v.rows, v.cols, v.stride = nr, nc, w
			} else {
				v.rows, v.cols, v.stride = nr, nc, base.stride
			}
			rel := r0*base.stride + c0
			v.off = base.off + rel
			b.view(v.name, of, rel, []int64{v.rows, v.cols}, []int64{v.stride, 1}, 1)
			rb.views = append(rb.views, v)
		case r < 78:
			reads := names(1 + int(b.intn(3)))
			var writes []string
			if b.intn(3) == 0 {
				writes = names(1)
			}
			if len(reads)+len(writes) == 0 {
				continue
			}
			submit(pickEngine(), reads, writes)
		case r < 92:
			i := b.intn(int64(len(live)))
			b.release(live[i].name)
			live = append(live[:i], live[i+1:]...)
		case r < 95:
			rb := live[b.intn(int64(len(live)))]
			if rb.dead || len(rb.views) == 0 {
				continue
			}
			b.release(rb.views[b.intn(int64(len(rb.views)))].name)
			rb.dead, rb.views = true, nil
		case r < 95+cfg.SyncPercent && len(ops) > 0:
			b.sync(ops[len(ops)-1-int(b.intn(int64(min(len(ops), 8))))].name)
		}
	}
	for len(live) > 0 {
		i := b.intn(int64(len(live)))
		b.release(live[i].name)
		live = append(live[:i], live[i+1:]...)
	}
}
