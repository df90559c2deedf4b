package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/subarena/subarena/trace/ggmltrace"
)

// This file is an independent calculator of a ggml-alloc-trace/1 graph's
// analysis figures, written from the rules the format states in
// analysis.rules and not from the ggml importer (package trace/ggmltrace):
//
//   - ggml_rules: ggml-alloc's schedule. Compute leafs and inputs are
//     allocated before node 0; at node i its own compute parents are
//     allocated lazily, then the node itself, in place over the first src
//     (in src order) that is an own non-view non-output compute tensor with
//     exactly one remaining consumer and no live views and the node's
//     type/ne/nb, when the node's op is in ggml_op_can_inplace; after node i
//     every src's consumer count drops by one, and a tensor whose consumer
//     and view counts are both zero is released (a view, when its consumer
//     count reaches zero, drops its hold on its view_src instead). Outputs
//     are never released. Live bytes are counted right after allocating
//     node i, before its releases.
//   - subrange_granular: the same blocks and in-place decisions, but each
//     byte of a block lives from the block's allocation to the last op that
//     reads it, directly or through a view's exact strided footprint; pure
//     view ops are not reads.
//   - subrange_elementwise_inplace: granular, minus, at each in-place-able
//     op that ggml did not run in place, min(bytes of its own sources whose
//     last read is that op, its output's bytes).
//
// Only the declaration of the format's fields, ggmltrace.Document, is shared
// with the importer: the calculator decodes a graph into it and works out
// every figure itself.

// ggFigures are the calculator's results. Per-step slices have one entry
// before node 0 and one right after allocating each node.
type ggFigures struct {
	RulesExact, RulesAligned, Granular, Elementwise int64
	StepRules, StepGranular, StepElementwise        []int64
	InPlace                                         [][2]string // node, parent
}

var ggInplaceOps = map[string]bool{
	"SCALE": true, "DIAG_MASK_ZERO": true, "DIAG_MASK_INF": true, "ADD": true, "ADD1": true,
	"SUB": true, "MUL": true, "DIV": true, "SQR": true, "SQRT": true, "LOG": true, "UNARY": true,
	"ROPE": true, "ROPE_BACK": true, "SILU_BACK": true, "RMS_NORM": true, "RMS_NORM_BACK": true,
	"SOFT_MAX": true, "SOFT_MAX_BACK": true,
}

var ggPureViews = map[string]bool{"VIEW": true, "RESHAPE": true, "PERMUTE": true, "TRANSPOSE": true}

// ggTypeSize is bytes per block and elements per block of a ggml type.
var ggTypeSize = map[string][2]int64{
	"f32": {4, 1}, "f16": {2, 1}, "bf16": {2, 1}, "i32": {4, 1}, "i16": {2, 1}, "i8": {1, 1},
	"f64": {8, 1}, "i64": {8, 1}, "q4_0": {18, 32}, "q8_0": {34, 32},
}

func ggGCD(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return max(a, -a)
}

// ggmlAnalyze computes the figures of one graph.
func ggmlAnalyze(data []byte) (*ggFigures, error) {
	g := &ggAnalysis{}
	if err := json.Unmarshal(data, &g.doc); err != nil {
		return nil, err
	}
	g.index()
	f := &ggFigures{}
	g.rules(f)
	if err := g.granular(f); err != nil {
		return nil, err
	}
	g.elementwise(f)
	return f, nil
}

// ggBlock is one block of ggml's rules: an own tensor and the in-place
// nodes that took it over.
type ggBlock struct {
	size, aligned int64
	allocStep     int // -1 = before node 0
	members       []int
	freed         int // step after which it is released; nSteps = never
}

// ggAnalysis is one graph under analysis: its tensors and nodes, the
// blocks ggml's rules give the compute buffer's tensors (rules), and the
// unit-granular last reads of those blocks (granular).
type ggAnalysis struct {
	doc    ggmltrace.Document
	ts     []ggmltrace.Tensor
	idx    map[string]int // tensor name → slot in ts
	nodes  []int          // slots of the nodes, in execution order
	nSteps int            // len(nodes) + 1

	// ggml_rules: blocks. blockOf[i] is the block index holding own tensor i.
	blocks          []*ggBlock
	blockOf         []int
	allocated       []bool
	inplaceDone     []bool
	children, views []int // per tensor: readers and views not yet run

	unit      int64     // gcd of every compute offset, stride and size
	lastRead  [][]int32 // lastRead[b][u]: last step reading unit u of block b (-2 = none)
	heldToEnd []bool    // per block: an output lives in it
}

// index reads the tensor table and the nodes' execution order.
func (g *ggAnalysis) index() {
	g.ts = g.doc.Tensors
	g.idx = map[string]int{}
	for i, t := range g.ts {
		g.idx[t.Name] = i
	}
	for i, t := range g.ts {
		if t.ExecIndex >= 0 {
			g.nodes = append(g.nodes, i)
		}
	}
	ts := g.ts
	slices.SortStableFunc(g.nodes, func(a, b int) int { return cmp.Compare(ts[a].ExecIndex, ts[b].ExecIndex) })
	g.nSteps = len(g.nodes) + 1
}

// src returns t's src slots, nulls skipped, duplicates kept.
func (g *ggAnalysis) src(t *ggmltrace.Tensor) []int {
	var out []int
	for _, s := range t.Src {
		if s != nil {
			out = append(out, g.idx[*s])
		}
	}
	return out
}

func (g *ggAnalysis) isView(i int) bool { return g.ts[i].ViewSrc != nil }

func (g *ggAnalysis) own(i int) bool { return g.ts[i].Buffer == "compute" && !g.isView(i) }

func (g *ggAnalysis) sameLayout(a, b int) bool {
	ts := g.ts
	return ts[a].Type == ts[b].Type && slices.Equal(ts[a].Ne, ts[b].Ne) && slices.Equal(ts[a].Nb, ts[b].Nb)
}

// newBlock gives own tensor i a block of its own from step on.
func (g *ggAnalysis) newBlock(i, step int) {
	sz := g.ts[i].Nbytes
	al := sz
	if g.ts[i].AllocSize != nil {
		al = *g.ts[i].AllocSize
	}
	if a := g.doc.Alignment; a > 0 {
		al = (al + a - 1) / a * a
	}
	g.blockOf[i] = len(g.blocks)
	g.blocks = append(g.blocks, &ggBlock{size: sz, aligned: al, allocStep: step, members: []int{i}, freed: g.nSteps})
	g.allocated[i] = true
}

// live returns the bytes of the blocks live at step, exact and aligned.
func (g *ggAnalysis) live(step int) (exact, al int64) {
	for _, b := range g.blocks {
		if b.allocStep <= step && step <= b.freed {
			exact += b.size
			al += b.aligned
		}
	}
	return
}

// rules runs ggml's rules over the nodes: the per-step live bytes and
// their maxima, and the in-place reuses.
func (g *ggAnalysis) rules(f *ggFigures) {
	ts := g.ts
	g.children = make([]int, len(ts))
	g.views = make([]int, len(ts))
	for _, n := range g.nodes {
		for _, s := range g.src(&ts[n]) {
			g.children[s]++
		}
		if g.isView(n) {
			g.views[g.idx[*ts[n].ViewSrc]]++
		}
	}
	g.blockOf = make([]int, len(ts))
	for i := range g.blockOf {
		g.blockOf[i] = -1
	}
	g.allocated = make([]bool, len(ts))
	for i, t := range ts {
		if t.ExecIndex < 0 || t.IsInput {
			if g.own(i) && !g.allocated[i] {
				g.newBlock(i, -1)
			}
		}
	}
	f.StepRules = make([]int64, g.nSteps)
	aligned := make([]int64, g.nSteps)
	g.inplaceDone = make([]bool, len(ts))
	// step index s: -1 before node 0, k after allocating node k; a block
	// freed after node k has freed = k (live at k, not at k+1).
	f.StepRules[0], aligned[0] = g.live(-1)
	for k, n := range g.nodes {
		for _, p := range g.src(&ts[n]) {
			if g.own(p) && !g.allocated[p] {
				g.newBlock(p, k)
			}
		}
		if g.own(n) && !g.allocated[n] && !g.inplace(f, n) {
			g.newBlock(n, k)
		}
		f.StepRules[k+1], aligned[k+1] = g.live(k)
		g.freeSources(k, n)
	}
	f.RulesExact = slices.Max(f.StepRules)
	f.RulesAligned = slices.Max(aligned)
}

// inplace gives node n the block of a source it may overwrite under
// ggml's rule, and reports whether it did.
func (g *ggAnalysis) inplace(f *ggFigures, n int) bool {
	ts := g.ts
	if !ggInplaceOps[ts[n].Op] {
		return false
	}
	for _, p := range g.src(&ts[n]) {
		if !g.own(p) || ts[p].IsOutput || !g.sameLayout(n, p) || !g.allocated[p] {
			continue
		}
		if g.children[p] == 1 && g.views[p] == 0 {
			b := g.blockOf[p]
			g.blockOf[n] = b
			g.blocks[b].members = append(g.blocks[b].members, n)
			g.allocated[p] = false // the node holds the block now
			g.allocated[n] = true
			g.inplaceDone[n] = true
			f.InPlace = append(f.InPlace, [2]string{ts[n].Name, ts[p].Name})
			return true
		}
	}
	return false
}

// freeSources frees, after node n at step k, the sources (or the bases of
// source views) it was the last reader of.
func (g *ggAnalysis) freeSources(k, n int) {
	ts := g.ts
	for _, p := range g.src(&ts[n]) {
		g.children[p]--
		if g.children[p] == 0 && g.views[p] == 0 {
			if g.isView(p) {
				v := g.idx[*ts[p].ViewSrc]
				g.views[v]--
				if g.views[v] == 0 && g.children[v] == 0 {
					g.free(k, v)
				}
			} else {
				g.free(k, p)
			}
		}
	}
}

// free releases tensor i's block after step k, unless i is an output.
func (g *ggAnalysis) free(k, i int) {
	if g.allocated[i] && !g.ts[i].IsOutput {
		g.allocated[i] = false
		g.blocks[g.blockOf[i]].freed = k
	}
}

// findUnit sets the unit of byte-granular liveness: the gcd of every
// compute offset, stride and size.
func (g *ggAnalysis) findUnit() error {
	unit := int64(0)
	for _, t := range g.ts {
		if t.Buffer != "compute" {
			continue
		}
		sz := ggTypeSize[t.Type][0]
		if sz == 0 {
			return fmt.Errorf("tensor %q: type %q", t.Name, t.Type)
		}
		unit = ggGCD(unit, sz)
		unit = ggGCD(unit, t.ViewOffs)
		unit = ggGCD(unit, t.Nbytes)
		for _, nb := range t.Nb {
			unit = ggGCD(unit, nb)
		}
	}
	if unit <= 0 {
		unit = 1
	}
	g.unit = unit
	return nil
}

// footprint calls fn with the units tensor i covers in its block.
func (g *ggAnalysis) footprint(i int, fn func(b int, u int64)) {
	ts, unit := g.ts, g.unit
	base := i
	offs := int64(0)
	if g.isView(i) {
		base = g.idx[*ts[i].ViewSrc]
		offs = ts[i].ViewOffs
	}
	b := g.blockOf[base]
	if b < 0 {
		return // not in the compute buffer
	}
	t := &ts[i]
	sz := ggTypeSize[t.Type]
	ne := [4]int64{1, 1, 1, 1}
	nb := [4]int64{}
	copy(ne[:], t.Ne)
	copy(nb[:], t.Nb)
	ne[0] /= sz[1]
	for i3 := int64(0); i3 < ne[3]; i3++ {
		for i2 := int64(0); i2 < ne[2]; i2++ {
			for i1 := int64(0); i1 < ne[1]; i1++ {
				for i0 := int64(0); i0 < ne[0]; i0++ {
					o := offs + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3]
					for u := o / unit; u < (o+sz[0]+unit-1)/unit; u++ {
						fn(b, u)
					}
				}
			}
		}
	}
}

// markHeldToEnd marks the blocks an output lives in.
func (g *ggAnalysis) markHeldToEnd() {
	g.heldToEnd = make([]bool, len(g.blocks))
	for i, t := range g.ts {
		if t.IsOutput {
			base := i
			if g.isView(i) {
				base = g.idx[*t.ViewSrc]
			}
			if g.blockOf[base] >= 0 {
				g.heldToEnd[g.blockOf[base]] = true
			}
		}
	}
}

// lastOf returns the last step unit u of block b is live at.
func (g *ggAnalysis) lastOf(b int, u int64) int {
	if g.heldToEnd[b] {
		return g.nSteps - 2
	}
	return max(int(g.lastRead[b][u]), g.blocks[b].allocStep)
}

// granular computes byte-granular liveness in units of the gcd of every
// compute offset, stride and size: the per-step live bytes and their
// maximum.
func (g *ggAnalysis) granular(f *ggFigures) error {
	if err := g.findUnit(); err != nil {
		return err
	}
	unit, nSteps := g.unit, g.nSteps
	g.lastRead = make([][]int32, len(g.blocks))
	for b, bl := range g.blocks {
		lr := make([]int32, (bl.size+unit-1)/unit)
		for u := range lr {
			lr[u] = -2
		}
		g.lastRead[b] = lr
	}
	for k, n := range g.nodes {
		if ggPureViews[g.ts[n].Op] {
			continue
		}
		for _, p := range g.src(&g.ts[n]) {
			g.footprint(p, func(b int, u int64) { g.lastRead[b][u] = int32(k) })
		}
	}
	g.markHeldToEnd()
	diff := make([]int64, nSteps+1)
	for b, bl := range g.blocks {
		for u := range g.lastRead[b] {
			w := min(unit, bl.size-int64(u)*unit)
			diff[bl.allocStep+1] += w
			diff[g.lastOf(b, int64(u))+2] -= w
		}
	}
	f.StepGranular = make([]int64, nSteps)
	var run int64
	for s := range nSteps {
		run += diff[s]
		f.StepGranular[s] = run
	}
	f.Granular = slices.Max(f.StepGranular)
	return nil
}

// elementwise computes the granular figures with each in-place op that
// ggml's rules did not place in place reusing the bytes its sources free
// as it runs.
func (g *ggAnalysis) elementwise(f *ggFigures) {
	ts, unit := g.ts, g.unit
	f.StepElementwise = slices.Clone(f.StepGranular)
	for k, n := range g.nodes {
		if !ggInplaceOps[ts[n].Op] || g.inplaceDone[n] || !g.own(n) {
			continue
		}
		seen := map[[2]int64]bool{}
		var dying int64
		for _, p := range g.src(&ts[n]) {
			g.footprint(p, func(b int, u int64) {
				key := [2]int64{int64(b), u}
				if seen[key] || g.heldToEnd[b] || g.lastOf(b, u) != k {
					return
				}
				seen[key] = true
				dying += min(unit, g.blocks[b].size-u*unit)
			})
		}
		f.StepElementwise[k+1] -= min(dying, ts[n].Nbytes)
	}
	f.Elementwise = slices.Max(f.StepElementwise)
}

// TestGGMLCalculatorTiny checks the calculator against the figures
// ggml-tiny.json carries: every maximum and every per-step array.
func TestGGMLCalculatorTiny(t *testing.T) {
	data, err := os.ReadFile(ggmlTiny)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Analysis struct {
			Reuses       [][2]string `json:"inplace_reuses"`
			RulesExact   int64       `json:"max_live_bytes_ggml_rules_exact"`
			RulesAligned int64       `json:"max_live_bytes_ggml_rules_aligned"`
			Granular     int64       `json:"max_live_bytes_subrange_granular_exact"`
			Elementwise  int64       `json:"max_live_bytes_subrange_elementwise_inplace_exact"`
			Steps        struct {
				Rules       []int64 `json:"ggml_rules_exact"`
				Granular    []int64 `json:"subrange_granular_exact"`
				Elementwise []int64 `json:"subrange_elementwise_inplace_exact"`
			} `json:"live_bytes_per_step"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	f, err := ggmlAnalyze(data)
	if err != nil {
		t.Fatal(err)
	}
	a := doc.Analysis
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"ggml_rules_exact", f.RulesExact, a.RulesExact},
		{"ggml_rules_aligned", f.RulesAligned, a.RulesAligned},
		{"subrange_granular_exact", f.Granular, a.Granular},
		{"subrange_elementwise_inplace_exact", f.Elementwise, a.Elementwise},
	} {
		if c.want <= 0 || c.got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		got, want []int64
	}{
		{"ggml_rules_exact", f.StepRules, a.Steps.Rules},
		{"subrange_granular_exact", f.StepGranular, a.Steps.Granular},
		{"subrange_elementwise_inplace_exact", f.StepElementwise, a.Steps.Elementwise},
	} {
		if len(c.want) == 0 || !slices.Equal(c.got, c.want) {
			for s := range max(len(c.got), len(c.want)) {
				if s >= len(c.got) || s >= len(c.want) || c.got[s] != c.want[s] {
					t.Errorf("%s per step: first difference at index %d (%d entries, want %d)", c.name, s, len(c.got), len(c.want))
					break
				}
			}
		}
	}
	if !slices.Equal(f.InPlace, a.Reuses) {
		t.Errorf("in-place reuses %v, want %v", f.InPlace, a.Reuses)
	}
}
