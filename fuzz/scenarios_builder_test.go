package fuzz

import (
	"reflect"
	"testing"
)

// TestSeedFilesMatchBuilder: the seed scenario files (fuzz/scenario/seeds) give
// exactly the programs the hand-written Builder versions below give — the seeds'
// definition before they moved to files — with the same hazard flags.
func TestSeedFilesMatchBuilder(t *testing.T) {
	want := []struct {
		name   string
		hazard bool
		b      *Builder
	}{
		{"view-chain", true, viewChain()},
		{"two-branches", true, twoBranches()},
		{"qkv-slow-copy", true, qkvSlowCopy()},
		{"gate-up-split", true, gateUpSplit()},
		{"concat-members", true, concatMembers()},
		{"serial-queue", false, serialQueue()},
	}
	got := Scenarios()
	if len(got) != len(want) {
		t.Fatalf("%d scenarios, want %d", len(got), len(want))
	}
	for i, w := range want {
		p, err := w.b.Program()
		if err != nil {
			t.Fatal(err)
		}
		g := got[i]
		if g.Name != w.name || g.Hazard != w.hazard {
			t.Errorf("scenario %d: %s hazard=%v, want %s hazard=%v", i, g.Name, g.Hazard, w.name, w.hazard)
		}
		q := g.Program
		if q.String() != p.String() {
			t.Errorf("%s: file gives\n%s\nbuilder gives\n%s", w.name, q, p)
		}
		for _, f := range []struct {
			what      string
			got, want any
		}{
			{"name", q.Name, p.Name}, {"engines", q.Engines, p.Engines}, {"capacity", q.Capacity, p.Capacity},
			{"granule", q.Granule, p.Granule}, {"bufs", q.Bufs, p.Bufs}, {"views", q.Views, p.Views},
			{"ops", q.Ops, p.Ops}, {"reservations", q.Reservations, p.Reservations}, {"steps", q.Steps, p.Steps},
		} {
			if !reflect.DeepEqual(f.got, f.want) {
				t.Errorf("%s: %s differ:\n%#v\n%#v", w.name, f.what, f.got, f.want)
			}
		}
	}
}

// viewChain: Read A → extract region B → view C → view D → compute U on
// another engine. IR order sees A's direct users done (the views issue no
// command) and lets E overwrite A while U is still queued.
func viewChain() *Builder {
	b := NewBuilder("view-chain", 2, 128, 16)
	a, pa := b.Produce(64, 0, nil)
	region := b.Slice(b.Whole(a), 0, 16, 48, 1) // B
	c := b.Reshape(region, 4, 8)                // C
	d := b.Permute(c, 1, 0)                     // D
	u := b.Alloc(32, 1)                         // U's output
	b.Op(1, []int{pa}, R(d), W(b.Dense(u, 0, []int64{8, 4}, 1)))
	b.Release(a)
	e, _ := b.Produce(64, 0, nil) // E: lands on A's bytes under IR order
	b.Release(e, u)
	return b
}

// twoBranches: one tensor feeds two branches, each through its own view
// chain, computed on two engines; a temporary allocated after the release
// races the slower branch; the results are combined.
func twoBranches() *Builder {
	b := NewBuilder("two-branches", 2, 160, 16)
	x, px := b.Produce(64, 0, nil)
	v1 := b.Reshape(b.Slice(b.Whole(x), 0, 0, 32, 1), 2, 16)
	v2 := b.Permute(b.Reshape(b.Slice(b.Whole(x), 0, 32, 64, 1), 4, 8), 1, 0)
	y1, b1 := b.Produce(32, 1, []int{px}, R(v1))
	y2, _ := b.Produce(32, 0, nil, R(v2))
	b.Release(x)
	t, _ := b.Produce(64, 0, nil) // a temporary on the fast engine
	z, _ := b.Produce(32, 0, []int{b1}, R(b.Whole(y1)), R(b.Whole(y2)), R(b.Whole(t)))
	b.Release(t, y1, y2, z)
	return b
}

// qkvSlowCopy: a fused QKV projection [T, 3D] split into Q, K and V column
// blocks; attention reads Q and K on the compute engine while a slow copy
// engine reads V (into a KV cache). The next layer's projection reuses the
// bytes.
func qkvSlowCopy() *Builder {
	const t, d = 4, 8
	b := NewBuilder("qkv-slow-copy", 2, 192, 16)
	qkv, m, blocks := b.Fused(0, t, 1, d, d, d)
	q, k, v := blocks[0], blocks[1], blocks[2]
	kv, _ := b.Produce(t*d, 1, []int{m}, R(v)) // the slow copy
	out, _ := b.Produce(t*d, 0, nil, R(q), R(b.Permute(k, 1, 0)))
	b.Release(qkv)
	next, _ := b.Produce(t*3*d, 0, nil, R(b.Whole(out))) // the next layer's QKV
	b.Release(out, next, kv)
	return b
}

// gateUpSplit: a fused gate/up projection [T, 2F] split in halves; the up
// half is read on a second compute engine, the gate half on the first; the
// activation of the gate half then lands in a new buffer that IR order
// places over the projection while the up half is still being read.
func gateUpSplit() *Builder {
	const t, f = 4, 8
	b := NewBuilder("gate-up-split", 2, 128, 8)
	gu, p, halves := b.Fused(0, t, 1, f, f)
	gate, up := halves[0], halves[1]
	hu, upOp := b.Produce(t*f, 1, []int{p}, R(up))
	hg, _ := b.Produce(t*f, 0, nil, R(gate))
	b.Release(gu)
	act, _ := b.Produce(t*2*f, 0, nil, R(b.Whole(hg)))
	b.Op(0, []int{upOp}, R(b.Whole(act)), R(b.Whole(hu)), W(b.Whole(hg)))
	b.Release(act, hu, hg)
	return b
}

// concatMembers: two producers on two engines write the halves of one
// concat buffer (its members); a consumer on the second engine reads the
// whole concat through a permuted view; then a writer on the first engine
// reuses the bytes.
func concatMembers() *Builder {
	b := NewBuilder("concat-members", 2, 128, 16)
	cat := b.Alloc(64, 0)
	whole := b.Dense(cat, 0, []int64{2, 32}, 1)
	m0 := b.Op(0, nil, W(b.Derive(whole, ViewOp{Kind: ViewSelect, Dim: 0, Index: 0})))
	m1 := b.Op(1, nil, W(b.Derive(whole, ViewOp{Kind: ViewSelect, Dim: 0, Index: 1})))
	out, _ := b.Produce(32, 1, []int{m0, m1}, R(b.Permute(whole, 1, 0)))
	b.Release(cat)
	n, _ := b.Produce(64, 0, nil)
	b.Release(n, out)
	return b
}

// serialQueue: every op on one engine; queue order alone makes IR-order
// reuse safe, so no policy may be flagged.
func serialQueue() *Builder {
	b := NewBuilder("serial-queue", 1, 96, 16)
	a, _ := b.Produce(48, 0, nil)
	r, _ := b.Produce(16, 0, nil, R(b.Reshape(b.Whole(a), 6, 8)))
	b.Release(a)
	c, _ := b.Produce(48, 0, nil, R(b.Whole(r)))
	b.Op(0, nil, R(b.Whole(c)), W(b.Whole(r)))
	b.Release(c, r)
	return b
}
