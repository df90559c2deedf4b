package block

import (
	"github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

// Short names for the accesses the block's ops declare.
const (
	rd = subarena.Read
	wr = subarena.Write
	rw = subarena.ReadWrite
)

// step submits one step: the embedding of its n tokens, every layer, the
// final norm and LM head on the compute engine, and the consumer's read of
// the last logits row. Each buffer is allocated at the point of the engine
// that writes it first and released as soon as the host has submitted (and
// Used) its last reader.
func (r *runner) step(s int) error {
	c, w := r.c, r.w
	n, p0 := c.stepTokens(s)
	d := c.Dim

	xb, xv, xt, err := r.allocTensor(r.compute, n, d)
	if err != nil {
		return err
	}
	var waits []sasync.Event
	if s > 0 && !c.Forced {
		waits = []sasync.Event{r.lastConsumer} // the token comes from the consumer
	}
	tokens := r.res.Tokens[p0 : p0+n]
	if _, err := r.submit(r.compute, waits, func() error { return embed(xt, w.Embed, tokens) }, use{xv, subarena.Write}); err != nil {
		return err
	}
	for l := range c.Layers {
		if err := r.layer(l, n, p0, xv, xt); err != nil {
			return err
		}
	}

	hb, hv, err := r.allocDense(r.compute, n, d)
	if err != nil {
		return err
	}
	lb, lv, err := r.allocDense(r.compute, n, c.Vocab)
	if err != nil {
		return err
	}
	last, err := lv.Select(0, int64(n-1))
	if err != nil {
		return err
	}
	ts, err := tensors(hv, lv, last)
	if err != nil {
		return err
	}
	ht, lt, lastT := ts[0], ts[1], ts[2]
	if err := r.computeThen(xb, func() error { return RMSNorm(ht, xt, w.Norm) }, use{xv, subarena.Read}, use{hv, subarena.Write}); err != nil {
		return err
	}
	head, err := r.submit(r.compute, nil, func() error { return matMul(lt, ht, w.Head) },
		use{hv, subarena.Read}, use{lv, subarena.Write})
	if err != nil {
		return err
	}
	if err := r.releaseBuf(hb); err != nil {
		return err
	}

	row := rowMajor(r.res.Logits[s], c.Vocab)
	consume := func() error {
		if r.gate != nil {
			<-r.gate
		}
		if err := copyInto(row, lastT); err != nil {
			return err
		}
		next, err := argmax(row)
		if err != nil {
			return err
		}
		r.res.Next[s] = next
		if s < c.Steps && !c.Forced {
			r.res.Tokens[c.Prompt+s] = next
		}
		return nil
	}
	if _, err := r.submit(r.consumer, []sasync.Event{head}, consume, use{last, subarena.Read}); err != nil {
		return err
	}
	// Only the last row has a reader left: under the subrange policies the
	// other rows return at once.
	return r.releaseBuf(lb)
}

// layer submits one decoder block over the residual stream x [n, D],
// which it updates in place: attention here, then feedForward.
func (r *runner) layer(l, n, p0 int, xv *subarena.View, xt Tensor) error {
	c, lw := r.c, r.w.Layers[l]
	d, h, dh := c.Dim, c.Heads, c.HeadDim()

	// h = RMSNorm(x); qkv = h·Wqkv, split into Q, K, V views [n, H, Dh].
	qb, parts, err := r.normProject(n, xv, xt, lw.Norm1, lw.QKV, d, d, d)
	if err != nil {
		return err
	}
	heads := make([]*subarena.View, 3)
	for i, p := range parts {
		if heads[i], err = p.Reshape(int64(n), int64(h), int64(dh)); err != nil {
			return err
		}
	}
	qv, kv, vv := heads[0], heads[1], heads[2]
	ts, err := tensors(qv, kv, vv)
	if err != nil {
		return err
	}
	qt, kt, vt := ts[0], ts[1], ts[2]
	rope, err := r.submit(r.compute, nil, func() error {
		if err := rope(qt, p0, r.w.Cos, r.w.Sin); err != nil {
			return err
		}
		return rope(kt, p0, r.w.Cos, r.w.Sin)
	}, use{qv, rw}, use{kv, rw})
	if err != nil {
		return err
	}

	// The copy engine writes K and V into the cache; their thirds of the
	// qkv buffer are discarded at once and return when the copy is done.
	if err := r.writeCache(l, n, p0, rope, kv, vv, kt, vt); err != nil {
		return err
	}
	if err := r.discard(kv); err != nil {
		return err
	}
	if err := r.discard(vv); err != nil {
		return err
	}

	// Attention over the cache (host chunks and arena chunks), then the
	// output projection and the residual.
	ab, av, err := r.allocDense(r.compute, n, d)
	if err != nil {
		return err
	}
	a3, err := av.Reshape(int64(n), int64(h), int64(dh))
	if err != nil {
		return err
	}
	segs, segUses, err := r.segments(l, p0+n)
	if err != nil {
		return err
	}
	ts, err = tensors(av, a3)
	if err != nil {
		return err
	}
	at, a3t := ts[0], ts[1]
	uses := append([]use{{qv, rd}, {a3, wr}}, segUses...)
	if _, err := r.submit(r.compute, []sasync.Event{r.lastCopy}, func() error { return Attention(a3t, qt, p0, segs) }, uses...); err != nil {
		return err
	}
	if err := r.releaseBuf(qb); err != nil {
		return err
	}
	if err := r.addProjection(n, xv, xt, av, at, lw.Out, ab); err != nil {
		return err
	}

	return r.feedForward(l, n, xv, xt)
}

// feedForward submits a block's feed-forward half over the residual stream
// x [n, D]: gate|up = RMSNorm(x)·Wgu, split in halves; gate = silu(gate)·up
// in place (up is discarded at once); x += gate·Wdown.
func (r *runner) feedForward(l, n int, xv *subarena.View, xt Tensor) error {
	lw, f := r.w.Layers[l], r.c.FFN
	gub, halves, err := r.normProject(n, xv, xt, lw.Norm2, lw.GateUp, f, f)
	if err != nil {
		return err
	}
	gate, up := halves[0], halves[1]
	ts, err := tensors(gate, up)
	if err != nil {
		return err
	}
	gatet, upt := ts[0], ts[1]
	if err := r.computeThen(nil, func() error { return siluMul(gatet, gatet, upt) }, use{gate, rw}, use{up, rd}); err != nil {
		return err
	}
	if err := r.discard(up); err != nil {
		return err
	}
	return r.addProjection(n, xv, xt, gate, gatet, lw.Down, gub)
}

// normProject submits h = RMSNorm(x) into a new [n, D] buffer and then
// h·w into a new [n, Σ widths] buffer, releasing h's, and returns the new
// buffer and its column blocks of the given widths, in order.
func (r *runner) normProject(n int, xv *subarena.View, xt Tensor, norm, w []float32, widths ...int) (*subarena.Buffer, []*subarena.View, error) {
	cols, sizes := 0, make([]int64, len(widths))
	for i, wd := range widths {
		cols += wd
		sizes[i] = int64(wd)
	}
	hb, hv, ht, err := r.allocTensor(r.compute, n, r.c.Dim)
	if err != nil {
		return nil, nil, err
	}
	pb, pv, pt, err := r.allocTensor(r.compute, n, cols)
	if err != nil {
		return nil, nil, err
	}
	blocks, err := pv.Split(1, sizes...)
	if err != nil {
		return nil, nil, err
	}
	if err := r.computeThen(nil, func() error { return RMSNorm(ht, xt, norm) }, use{xv, rd}, use{hv, wr}); err != nil {
		return nil, nil, err
	}
	if err := r.computeThen(hb, func() error { return matMul(pt, ht, w) }, use{hv, rd}, use{pv, wr}); err != nil {
		return nil, nil, err
	}
	return pb, blocks, nil
}

// addProjection adds in·w to the residual stream x [n, D] through a new
// [n, D] buffer; done, the buffer of in's view inv, is released once the
// projection is submitted, and the new buffer once the addition is.
func (r *runner) addProjection(n int, xv *subarena.View, xt Tensor, inv *subarena.View, in Tensor, w []float32, done *subarena.Buffer) error {
	ob, ov, ot, err := r.allocTensor(r.compute, n, r.c.Dim)
	if err != nil {
		return err
	}
	if err := r.computeThen(done, func() error { return matMul(ot, in, w) }, use{inv, rd}, use{ov, wr}); err != nil {
		return err
	}
	return r.computeThen(ob, func() error { return add(xt, xt, ot) }, use{xv, rw}, use{ov, rd})
}
