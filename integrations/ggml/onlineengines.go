//go:build !subarena_extggml

package ggml

// #include "sa_ggml.h"
import "C"

import (
	"context"
	"fmt"
	"time"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// offload submits a copy op reading v (written by the op behind after) to
// host memory.
func (o *Online) offload(st *OnlineStep, after sasync.Event, v *subarena.View) error {
	op := gatherOp{engine: o.copier, v: v, src: v.Buffer().Bytes(), l: v.Layout(), delay: o.opts.CopyDelay, n: o.nCopies}
	o.nCopies++
	return o.submitGather(after, op, &st.offloads, &st.copies)
}

// consume submits a consumer op reading the output rows of t.
func (o *Online) consume(st *OnlineStep, after sasync.Event, t *C.struct_ggml_tensor, b *obase, tokens int) error {
	l, err := rowsLayout(t, tokens)
	if err != nil {
		return err
	}
	v, err := b.buf.View(l)
	if err != nil {
		return err
	}
	op := gatherOp{engine: o.consumer, v: v, src: b.buf.Bytes(), l: l, delay: o.opts.ConsumerDelay, n: o.nConsumed}
	o.nConsumed++
	if hold := o.opts.HoldConsumer; hold > 0 {
		o.hmu.Lock()
		epoch := o.epoch
		o.hmu.Unlock()
		target := after.Seq + sasync.Seq(hold)
		op.before = func() { o.holdUntil(target, epoch) }
	}
	return o.submitGather(after, op, &st.outputs, &st.consumers)
}

// gatherOp is a copy or consumer op: it reads v, copying the bytes of
// layout l of src to host memory.
type gatherOp struct {
	engine sasync.EngineID
	v      *subarena.View
	src    []byte
	l      strided.Layout
	// delay, when set, is how long the op sleeps: delay(n).
	delay func(n int) time.Duration
	n     int
	// before, when set, runs first in the op.
	before func()
}

// submitGather submits op on its engine after after, appending the slot
// the op writes its bytes to to *slots and the op's event to *events.
func (o *Online) submitGather(after sasync.Event, op gatherOp, slots *[]*[]byte, events *[]sasync.Event) error {
	slot := new([]byte)
	*slots = append(*slots, slot)
	ev, err := o.submit(op.engine, []sasync.Event{after}, func() error {
		if op.before != nil {
			op.before()
		}
		if op.delay != nil {
			sleep(op.delay(op.n))
		}
		*slot = gather(nil, op.src, op.l)
		return nil
	}, use{op.v, subarena.Read})
	if err != nil {
		return err
	}
	*events = append(*events, ev)
	return nil
}

// holdUntil blocks until the compute engine has completed target ops, or
// the host has waited since the hold began.
func (o *Online) holdUntil(target sasync.Seq, epoch uint64) {
	o.hmu.Lock()
	for o.done < target && o.epoch == epoch {
		o.hcond.Wait()
	}
	o.hmu.Unlock()
}

// openHolds releases every consumer op held so far.
func (o *Online) openHolds() {
	o.hmu.Lock()
	o.epoch++
	o.hcond.Broadcast()
	o.hmu.Unlock()
}

// rowsLayout is the view of output t the consumer reads: the row of the
// last of tokens new tokens of each sequence of a [width, rows] tensor, or
// all of t.
func rowsLayout(t *C.struct_ggml_tensor, tokens int) (strided.Layout, error) {
	l, err := tensorLayout(t)
	if err != nil || tokens <= 0 {
		return l, err
	}
	T := int64(tokens)
	if l.Shape[0] != 1 || l.Shape[1] != 1 || l.Shape[2]%T != 0 {
		return l, fmt.Errorf("%w: output %q of shape %v has no rows of %d tokens", ErrGraph, tensorName(t), l.Shape, tokens)
	}
	return strided.Layout{
		Offset:  l.Offset + (T-1)*l.Strides[2],
		Shape:   []int64{l.Shape[2] / T, l.Shape[3]},
		Strides: []int64{T * l.Strides[2], l.Strides[3]},
		Elem:    l.Elem,
	}, nil
}

// gather appends the bytes l covers in src, element by element in
// row-major order of l's shape.
func gather(dst, src []byte, l strided.Layout) []byte {
	return gatherAt(dst, src, l.Offset, l.Shape, l.Strides, l.Elem)
}

func gatherAt(dst, src []byte, off int64, shape, strides []int64, elem int64) []byte {
	switch {
	case len(shape) == 0:
		return append(dst, src[off:off+elem]...)
	case len(shape) == 1 && strides[0] == elem:
		return append(dst, src[off:off+shape[0]*elem]...)
	}
	for i := range shape[0] {
		dst = gatherAt(dst, src, off+i*strides[0], shape[1:], strides[1:], elem)
	}
	return dst
}

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// submit queues fn on engine e after waits, then records every view it
// touches under its event: submit first, then Use (the Allocator accepts
// an event that has already completed).
func (o *Online) submit(e sasync.EngineID, waits []sasync.Event, fn func() error, uses ...use) (sasync.Event, error) {
	ev, err := o.x.Submit(e, waits, func(context.Context) error { return fn() })
	if err != nil {
		return ev, err
	}
	o.st.Ops++
	for _, u := range uses {
		if err := o.a.Use(u.v, ev, u.acc); err != nil {
			return ev, fmt.Errorf("use of %v by %v: %w", u.v, ev, err)
		}
	}
	return ev, o.check()
}

func (o *Online) check() error {
	if !o.opts.Check {
		return nil
	}
	return o.a.CheckInvariants()
}

// alloc returns a buffer of size bytes for a writer at the compute
// engine's next point. When nothing fits it releases held consumers, waits
// for the work the Allocator names (or for the last op of every engine
// with work in flight) until the Allocator has seen it complete, and
// retries (subarena.Allocator.AllocWaiting).
func (o *Online) alloc(size int64) (*subarena.Buffer, error) {
	b, err := o.a.AllocWaiting(size, o.compute, subarena.SpaceWait{
		Executor: o.x,
		Engines:  []sasync.EngineID{o.compute, o.copier, o.consumer},
		Stalled: func(attempt int) {
			if attempt == 0 {
				o.st.Stalls++
			}
			o.openHolds()
		},
	})
	if err != nil {
		return nil, err
	}
	o.st.Allocs++
	o.st.AllocBytes += ranges.Granule(o.opts.Granule).Up(size)
	return b, o.check()
}
