package fuzz

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
)

// Builder writes a program by hand, step by step; Program validates it.
// Methods return the index of what they create (buffer, view, op,
// reservation). The first error sticks and is returned by Program.
type Builder struct {
	p   *Program
	err error
}

// NewBuilder starts a program on engines engines over an arena of capacity
// bytes with the given granule.
func NewBuilder(name string, engines int, capacity, granule int64) *Builder {
	return &Builder{p: &Program{Name: name, Engines: engines, Capacity: capacity, Granule: granule}}
}

// R, W and RW are uses of a view by an op.
func R(v int) Use { return Use{View: v, Access: subarena.Read, Res: -1} }

// W is a write use of view v.
func W(v int) Use { return Use{View: v, Access: subarena.Write, Res: -1} }

// RW is a read-write (in place) use of view v.
func RW(v int) Use { return Use{View: v, Access: subarena.ReadWrite, Res: -1} }

// Alloc allocates size bytes at the point of engine.
func (b *Builder) Alloc(size int64, engine int) int {
	buf := len(b.p.Bufs)
	b.p.Bufs = append(b.p.Bufs, BufDef{Size: size, Engine: engine, From: -1, Op: -1})
	b.p.Steps = append(b.p.Steps, Step{Kind: StepAlloc, Buf: buf, Size: size, Engine: engine})
	return buf
}

// Whole is the view of every byte of buf.
func (b *Builder) Whole(buf int) int { return b.view(buf, -1, ViewOp{Kind: ViewWhole}) }

// Dense is a row-major view of buf.
func (b *Builder) Dense(buf int, off int64, shape []int64, elem int64) int {
	return b.view(buf, -1, ViewOp{Kind: ViewDense, Offset: off, Shape: shape, Elem: elem})
}

// Derive applies a builder to view v.
func (b *Builder) Derive(v int, op ViewOp) int {
	if v < 0 || v >= len(b.p.Views) {
		b.setErr(fmt.Errorf("derive from unknown view v%d", v))
		return -1
	}
	return b.view(b.p.Views[v].Buf, v, op)
}

// Slice, Reshape, Permute and Split are Derive shorthands.
func (b *Builder) Slice(v, dim int, start, stop, step int64) int {
	return b.Derive(v, ViewOp{Kind: ViewSlice, Dim: dim, Start: start, Stop: stop, Step: step})
}

// Reshape derives a reshaped view of v.
func (b *Builder) Reshape(v int, shape ...int64) int {
	return b.Derive(v, ViewOp{Kind: ViewReshape, Shape: shape})
}

// Permute derives a view of v with its dimensions reordered.
func (b *Builder) Permute(v int, perm ...int) int {
	return b.Derive(v, ViewOp{Kind: ViewPermute, Perm: perm})
}

// Split derives part of v split along dim into sizes.
func (b *Builder) Split(v, dim int, part int, sizes ...int64) int {
	return b.Derive(v, ViewOp{Kind: ViewSplit, Dim: dim, Sizes: sizes, Part: part})
}

func (b *Builder) view(buf, parent int, op ViewOp) int {
	if buf < 0 || buf >= len(b.p.Bufs) {
		b.setErr(fmt.Errorf("view of unknown buffer b%d", buf))
		return -1
	}
	var pl strided.Layout
	if parent >= 0 {
		pl = b.p.Views[parent].Layout
	}
	l, err := op.layout(pl, b.p.Bufs[buf].Size)
	if err != nil {
		b.setErr(fmt.Errorf("view %v of b%d: %w", op, buf, err))
		return -1
	}
	bytes, ok := oracleBytes(l)
	if !ok {
		b.setErr(fmt.Errorf("view %v of b%d: too many elements", op, buf))
		return -1
	}
	v := len(b.p.Views)
	b.p.Views = append(b.p.Views, ViewDef{Buf: buf, Parent: parent, Op: op, Layout: l, Bytes: bytes})
	return v
}

// Op submits an op on engine that waits for waits and uses uses.
func (b *Builder) Op(engine int, waits []int, uses ...Use) int {
	op := len(b.p.Ops)
	b.p.Ops = append(b.p.Ops, OpDef{Engine: engine, Step: len(b.p.Steps)})
	b.p.Steps = append(b.p.Steps, Step{Kind: StepSubmit, Op: op, Engine: engine, Waits: waits, Uses: uses})
	return op
}

// Produce allocates size bytes at the point of engine and submits an op on
// engine that waits for waits, uses uses and then writes the whole new
// buffer; it returns the buffer and the op.
func (b *Builder) Produce(size int64, engine int, waits []int, uses ...Use) (buf, op int) {
	buf = b.Alloc(size, engine)
	return buf, b.Op(engine, waits, append(uses[:len(uses):len(uses)], W(b.Whole(buf)))...)
}

// Fused allocates a row-major [rows, Σ widths] buffer of elem-byte
// elements at the point of engine, submits an op on engine that writes it
// whole, and views its column blocks of the given widths (Split of the
// dense view); it returns the buffer, the op and the blocks, in order.
func (b *Builder) Fused(engine int, rows, elem int64, widths ...int64) (buf, op int, blocks []int) {
	var cols int64
	for _, w := range widths {
		cols += w
	}
	buf = b.Alloc(rows*cols*elem, engine)
	whole := b.Dense(buf, 0, []int64{rows, cols}, elem)
	op = b.Op(engine, nil, W(whole))
	for i := range widths {
		blocks = append(blocks, b.Split(whole, 1, i, widths...))
	}
	return buf, op, blocks
}

// Release releases each of bufs, in order.
func (b *Builder) Release(bufs ...int) {
	for _, buf := range bufs {
		b.p.Steps = append(b.p.Steps, Step{Kind: StepRelease, Buf: buf})
	}
}

// Discard discards view v.
func (b *Builder) Discard(v int) { b.p.Steps = append(b.p.Steps, Step{Kind: StepDiscard, View: v}) }

// HostSync makes the host wait for op.
func (b *Builder) HostSync(op int) { b.p.Steps = append(b.p.Steps, Step{Kind: StepHostSync, Op: op}) }

// Donate donates view v to op and returns the new buffer.
func (b *Builder) Donate(v, op int) int {
	if v < 0 || v >= len(b.p.Views) {
		b.setErr(fmt.Errorf("donate unknown view v%d", v))
		return -1
	}
	buf := len(b.p.Bufs)
	b.p.Bufs = append(b.p.Bufs, BufDef{Size: int64(len(b.p.Views[v].Bytes)), Engine: -1, From: v, Op: op})
	b.p.Steps = append(b.p.Steps, Step{Kind: StepDonate, Buf: buf, View: v, Op: op})
	return buf
}

// Claim claims view v, then commits or abandons the claim.
func (b *Builder) Claim(v int, commit bool) {
	b.p.Steps = append(b.p.Steps, Step{Kind: StepClaim, View: v, Commit: commit})
}

// Reserve reserves view v for a later op (use it with Reserved).
func (b *Builder) Reserve(v int) int {
	r := b.p.Reservations
	b.p.Reservations++
	b.p.Steps = append(b.p.Steps, Step{Kind: StepReserve, View: v, Res: r})
	return r
}

// Reserved is a use of view v registered by activating reservation r.
func Reserved(u Use, r int) Use { u.Res = r; return u }

// Cancel cancels reservation r.
func (b *Builder) Cancel(r int) { b.p.Steps = append(b.p.Steps, Step{Kind: StepCancel, Res: r}) }

func (b *Builder) setErr(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Program returns the program, validated.
func (b *Builder) Program() (*Program, error) {
	if b.err != nil {
		return nil, errors.Join(ErrMalformed, b.err)
	}
	if err := b.p.Validate(); err != nil {
		return nil, err
	}
	return b.p, nil
}
