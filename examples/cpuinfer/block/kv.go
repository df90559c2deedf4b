package block

import (
	"fmt"

	"github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

// chunk is one arena buffer of the KV cache: positions [lo, lo+C) of one
// layer, laid out [2, C, H, Dh] (keys, then values). The copy engine
// allocates it when it first writes into it, fills it row by row, and —
// once full, or at the end of the run — offloads it to the host copy in
// Result.K/V; then the host releases it and attention reads those
// positions from the host copy.
type chunk struct {
	buf       *subarena.Buffer
	lo        int
	k, v      *subarena.View // [C, H, Dh] each
	offloaded bool
}

// writeCache submits the copy-engine op that writes the n new keys and
// values (views of the qkv buffer, rotated by the op rope) at positions
// [p0, p0+n) into the layer's chunks, allocating chunks as needed at the
// copy engine's point, then offloads every chunk the write filled.
func (r *runner) writeCache(l, n, p0 int, rope sasync.Event, kv, vv *subarena.View, kt, vt Tensor) error {
	c := r.c
	first, last := p0/c.Chunk, (p0+n-1)/c.Chunk
	type piece struct {
		dk, dv Tensor // destination rows in the chunk
		sk, sv Tensor // source rows of the new keys and values
	}
	var pieces []piece
	uses := []use{{kv, subarena.Read}, {vv, subarena.Read}}
	for ci := first; ci <= last; ci++ {
		ch, err := r.chunkFor(l, ci)
		if err != nil {
			return err
		}
		a, b := max(p0, ch.lo), min(p0+n, ch.lo+c.Chunk)
		dk, err := ch.k.Slice(0, int64(a-ch.lo), int64(b-ch.lo), 1)
		if err != nil {
			return err
		}
		dv, err := ch.v.Slice(0, int64(a-ch.lo), int64(b-ch.lo), 1)
		if err != nil {
			return err
		}
		ts, err := tensors(dk, dv)
		if err != nil {
			return err
		}
		pieces = append(pieces, piece{ts[0], ts[1], kt.Rows(a-p0, b-p0), vt.Rows(a-p0, b-p0)})
		uses = append(uses, use{dk, subarena.Write}, use{dv, subarena.Write})
	}
	write := func() error {
		for _, p := range pieces {
			if err := copyInto(p.dk, p.sk); err != nil {
				return err
			}
			if err := copyInto(p.dv, p.sv); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := r.submit(r.copier, []sasync.Event{rope}, write, uses...); err != nil {
		return err
	}
	for ci := first; ci <= last; ci++ {
		if ch := r.kv[l][ci]; ch.lo+c.Chunk <= p0+n {
			if err := r.offload(l, ch, c.Chunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// chunkFor returns chunk ci of layer l, allocating it at the copy engine's
// point (the copy engine writes it first).
func (r *runner) chunkFor(l, ci int) (*chunk, error) {
	if ch := r.kv[l][ci]; ch != nil {
		if ch.offloaded {
			return nil, fmt.Errorf("%w: chunk %d of layer %d written after its offload", ErrLayout, ci, l)
		}
		return ch, nil
	}
	c := r.c
	b, err := r.alloc(r.copier, 2*c.Chunk*c.Dim)
	if err != nil {
		return nil, err
	}
	whole, err := b.Dense(0, []int64{2, int64(c.Chunk), int64(c.Heads), int64(c.HeadDim())}, 4)
	if err != nil {
		return nil, err
	}
	ch := &chunk{buf: b, lo: ci * c.Chunk}
	if ch.k, err = whole.Select(0, 0); err != nil {
		return nil, err
	}
	if ch.v, err = whole.Select(0, 1); err != nil {
		return nil, err
	}
	r.kv[l][ci] = ch
	return ch, nil
}

// offload submits the copy of the first rows positions of ch to the host
// copy of the cache, and releases ch: the attention ops that read it from
// the arena have been submitted (and Used it) already; later ones read the
// host copy and wait for this op.
func (r *runner) offload(l int, ch *chunk, rows int) error {
	c := r.c
	sk, err := ch.k.Slice(0, 0, int64(rows), 1)
	if err != nil {
		return err
	}
	sv, err := ch.v.Slice(0, 0, int64(rows), 1)
	if err != nil {
		return err
	}
	ts, err := tensors(sk, sv)
	if err != nil {
		return err
	}
	lo, hi := ch.lo*c.Dim, (ch.lo+rows)*c.Dim
	hk := rowMajor(r.res.K[l][lo:hi], rows, c.Heads, c.HeadDim())
	hv := rowMajor(r.res.V[l][lo:hi], rows, c.Heads, c.HeadDim())
	offload := func() error {
		if err := copyInto(hk, ts[0]); err != nil {
			return err
		}
		return copyInto(hv, ts[1])
	}
	if _, err := r.submit(r.copier, nil, offload, use{sk, subarena.Read}, use{sv, subarena.Read}); err != nil {
		return err
	}
	ch.offloaded = true
	return r.releaseBuf(ch.buf)
}

// segments returns the KV cache of layer l for positions [0, end) as
// attention reads it: one host segment for the offloaded prefix, then the
// arena chunks, with the uses of the arena views it reads.
func (r *runner) segments(l, end int) ([]Segment, []use, error) {
	c := r.c
	var segs []Segment
	var uses []use
	host := 0 // positions [0, host) are offloaded
	for ci := 0; ci*c.Chunk < end; ci++ {
		ch := r.kv[l][ci]
		if ch == nil {
			return nil, nil, fmt.Errorf("%w: chunk %d of layer %d was never written", ErrLayout, ci, l)
		}
		rows := min(c.Chunk, end-ch.lo)
		if ch.offloaded {
			if ch.lo != host {
				return nil, nil, fmt.Errorf("%w: offloaded chunk %d of layer %d after one in the arena", ErrLayout, ci, l)
			}
			host += rows
			continue
		}
		kv, err := ch.k.Slice(0, 0, int64(rows), 1)
		if err != nil {
			return nil, nil, err
		}
		vv, err := ch.v.Slice(0, 0, int64(rows), 1)
		if err != nil {
			return nil, nil, err
		}
		ts, err := tensors(kv, vv)
		if err != nil {
			return nil, nil, err
		}
		segs = append(segs, Segment{Lo: ch.lo, K: ts[0], V: ts[1]})
		uses = append(uses, use{kv, subarena.Read}, use{vv, subarena.Read})
	}
	if host > 0 {
		hs := Segment{
			Lo: 0,
			K:  rowMajor(r.res.K[l][:host*c.Dim], host, c.Heads, c.HeadDim()),
			V:  rowMajor(r.res.V[l][:host*c.Dim], host, c.Heads, c.HeadDim()),
		}
		segs = append([]Segment{hs}, segs...)
	}
	return segs, uses, nil
}

// flush offloads and releases layer l's chunks still in the arena (the
// last, partly filled one).
func (r *runner) flush(l int) error {
	end := r.c.Positions()
	for _, ch := range r.kv[l] {
		if ch != nil && !ch.offloaded {
			if err := r.offload(l, ch, min(r.c.Chunk, end-ch.lo)); err != nil {
				return err
			}
		}
	}
	return nil
}
