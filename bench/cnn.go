package bench

import (
	"fmt"

	"github.com/subarena/subarena/trace"
)

// CNNConfig shapes workload 4: Inception-v3-style blocks ("InceptionC",
// 17×17 grid, 768 channels) run on two streams, frame after frame.
type CNNConfig struct {
	// Frames are processed one after another; the host syncs on a frame's
	// classifier only after issuing the next frame.
	Frames int
	// Blocks per frame; block i reduces to Reduce[i % len(Reduce)] channels
	// in its 7×7 branches (Inception-v3: 128, 160, 160, 192).
	Blocks int
	Reduce []int64
	// Channels in and out of every block (a multiple of 4), on an H×W grid
	// of Elem-byte elements, Batch images (NCHW).
	Channels, H, W, Elem, Batch int64
	Classes                     int64
	Seed                        uint64
}

// CNNInceptionV3 is Inception-v3's four InceptionC blocks at batch 1,
// fp16, for 4 frames.
var CNNInceptionV3 = CNNConfig{Frames: 4, Blocks: 4, Reduce: []int64{128, 160, 160, 192},
	Channels: 768, H: 17, W: 17, Elem: 2, Batch: 1, Classes: 1000, Seed: 42}

// CNNSmall is the same network at a quarter of the width on an 8×8 grid.
var CNNSmall = CNNConfig{Frames: 3, Blocks: 3, Reduce: []int64{32, 40, 48},
	Channels: 192, H: 8, W: 8, Elem: 2, Batch: 1, Classes: 100, Seed: 42}

func (c CNNConfig) validate() error {
	if c.Frames <= 0 || c.Frames > 1<<10 || c.Blocks <= 0 || c.Blocks > 1<<10 || len(c.Reduce) == 0 ||
		c.Channels <= 0 || c.Channels%4 != 0 || c.H <= 0 || c.W <= 0 || c.Elem <= 0 || c.Batch <= 0 ||
		c.Classes <= 0 || c.Channels*c.H*c.W*c.Elem*c.Batch > 1<<36 {
		return fmt.Errorf("%w: cnn config %+v", ErrInvalidWorkload, c)
	}
	for _, r := range c.Reduce {
		if r <= 0 || r > 1<<16 {
			return fmt.Errorf("%w: cnn reduce width %d", ErrInvalidWorkload, r)
		}
	}
	return nil
}

const engAux = "aux"

// CNN is workload 4: a CNN whose blocks concatenate their branches by
// aliasing: each block allocates one output buffer and every branch writes
// its own channel slice of it (a view), so the concat costs nothing. The
// block is Inception-v3's InceptionC — a 1×1 branch, a 1×1→1×7→7×1 branch,
// a 1×1→7×1→1×7→7×1→1×7 branch and an average-pool→1×1 branch — run as
// TensorRT runs it: the two 1×1 convolutions that open the 7×7 branches
// are fused horizontally into one convolution whose output is split into
// two channel views, the long double-7×7 branch runs on the compute
// stream, and the other three branches on an auxiliary stream. The next
// block waits for the auxiliary stream before reading the concat.
//
// The fused reduction's two halves die at different times on different
// streams: the compute stream's half is dead after its first 7×1
// convolution, while the auxiliary stream may still be reading the other.
// Each half starts on a granule boundary, as an engine lays out the
// outputs of a horizontally fused kernel that are tensors in their own
// right; the padding is under one granule per half. Packed at r channels
// (on the 17×17 grid r·578 bytes, not a multiple of 256 for r = 160 or
// 192), the granule that straddles the halves stays pinned by the
// auxiliary stream's reader, and the dead half is one granule short of
// the compute stream's next temporary of the same size.
func CNN(cfg CNNConfig) (*trace.Trace, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := newBuilder("cnn-concat", cfg.Seed, engCompute, engAux, engHost)
	chBytes := cfg.H * cfg.W * cfg.Elem // one channel of one image
	size := func(ch int64) int64 { return cfg.Batch * ch * chBytes }
	// conv cost: 2·cin·cout·k·H·W·batch flops.
	conv := func(cin, cout, k int64) float64 {
		return computeCost(float64(2*cin*cout*k*cfg.H*cfg.W*cfg.Batch), float64(size(cin)+size(cout)))
	}
	// slice views channels [lo, hi) of an NCHW buffer with ch channels.
	slice := func(name, of string, ch, lo, hi int64) {
		b.view(name, of, lo*chBytes, []int64{cfg.Batch, (hi - lo) * chBytes}, []int64{ch * chBytes, 1}, 1)
	}
	C := cfg.Channels
	q := C / 4
	b.external("image", size(C))
	b.external("weights", 1)
	b.external("scores", 4*cfg.Classes*int64(cfg.Frames))
	var pending []string
	for f := 0; f < cfg.Frames; f++ {
		fs := ".f" + itoa(f)
		x := "stem" + fs
		b.alloc(x, size(C), engCompute)
		b.op("stem"+fs, engCompute, conv(C, C, 1), opSpec{reads: []string{"image", "weights"}, writes: []string{x}})
		join := []string(nil) // the aux op the next block must wait for
		for blk := 0; blk < cfg.Blocks; blk++ {
			r := cfg.Reduce[blk%len(cfg.Reduce)]
			s := fmt.Sprintf("%s.b%d", fs, blk)
			nm := func(n string) string { return n + s }
			// Fused 1×1 reductions of both 7×7 branches: [r | r] channels,
			// each half starting on a granule (see CNN).
			half := (r*chBytes + trace.DefaultGranule - 1) &^ (trace.DefaultGranule - 1) // per image
			b.alloc(nm("red"), cfg.Batch*2*half, engCompute)
			b.op(nm("reduce"), engCompute, conv(C, 2*r, 1),
				opSpec{reads: []string{x, "weights"}, writes: []string{nm("red")}, waits: join})
			b.view(nm("red_a"), nm("red"), 0, []int64{cfg.Batch, r * chBytes}, []int64{2 * half, 1}, 1)
			b.view(nm("red_b"), nm("red"), half, []int64{cfg.Batch, r * chBytes}, []int64{2 * half, 1}, 1)
			// The concat output and its four branch slices.
			y := nm("cat")
			b.alloc(y, size(C), engAux)
			for i := int64(0); i < 4; i++ {
				slice(fmt.Sprintf("%s%d", y, i), y, C, i*q, (i+1)*q)
			}
			// Auxiliary stream: 1×1, 1×7→7×1 and pool branches.
			b.op(nm("b1x1"), engAux, conv(C, q, 1),
				opSpec{reads: []string{x, "weights"}, writes: []string{y + "0"}, waits: []string{nm("reduce")}})
			b.alloc(nm("u"), size(r), engAux)
			b.op(nm("b7_1x7"), engAux, conv(r, r, 7), opSpec{reads: []string{nm("red_a"), "weights"}, writes: []string{nm("u")}})
			b.op(nm("b7_7x1"), engAux, conv(r, q, 7), opSpec{reads: []string{nm("u"), "weights"}, writes: []string{y + "1"}})
			b.release(nm("u"))
			b.alloc(nm("pool"), size(C), engAux)
			b.op(nm("avgpool"), engAux, computeCost(float64(9*size(C)/cfg.Elem), float64(2*size(C))),
				opSpec{reads: []string{x}, writes: []string{nm("pool")}})
			b.op(nm("pool_proj"), engAux, conv(C, q, 1), opSpec{reads: []string{nm("pool"), "weights"}, writes: []string{y + "3"}})
			b.release(nm("pool"))
			// Compute stream: the double 7×7 branch.
			t := nm("t0")
			b.alloc(t, size(r), engCompute)
			b.op(nm("dbl_7x1a"), engCompute, conv(r, r, 7), opSpec{reads: []string{nm("red_b"), "weights"}, writes: []string{t}})
			b.release(nm("red"))
			b.release(x)
			for i, k := range []string{"1x7a", "7x1b"} {
				nt := nm(fmt.Sprintf("t%d", i+1))
				b.alloc(nt, size(r), engCompute)
				b.op(nm("dbl_"+k), engCompute, conv(r, r, 7), opSpec{reads: []string{t, "weights"}, writes: []string{nt}})
				b.release(t)
				t = nt
			}
			b.op(nm("dbl_1x7b"), engCompute, conv(r, q, 7), opSpec{reads: []string{t, "weights"}, writes: []string{y + "2"}})
			b.release(t)
			x, join = y, []string{nm("pool_proj")}
		}
		// Classifier: global average pool, then a linear layer.
		gap := "gap" + fs
		b.alloc(gap, cfg.Batch*C*4, engCompute)
		b.op("avgpool"+fs, engCompute, computeCost(float64(size(C)/cfg.Elem), float64(size(C))),
			opSpec{reads: []string{x}, writes: []string{gap}, waits: join})
		b.release(x)
		logits := "logits" + fs
		b.alloc(logits, cfg.Batch*cfg.Classes*4, engCompute)
		b.op("fc"+fs, engCompute, computeCost(float64(2*cfg.Batch*C*cfg.Classes), float64(4*C*cfg.Classes)),
			opSpec{reads: []string{gap, "weights"}, writes: []string{logits}})
		b.release(gap)
		top := "top5" + fs
		b.op(top, engHost, hostCost(float64(cfg.Batch*cfg.Classes*4)),
			opSpec{reads: []string{logits}, writes: []string{"scores"}, waits: []string{"fc" + fs}})
		b.release(logits)
		for _, op := range pending {
			b.sync(op)
		}
		pending = []string{top}
	}
	for _, op := range pending {
		b.sync(op)
	}
	return b.finish()
}
