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
	var doc ggmltrace.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	ts := doc.Tensors
	idx := map[string]int{}
	for i, t := range ts {
		idx[t.Name] = i
	}
	src := func(t *ggmltrace.Tensor) []int { // src slots, nulls skipped, duplicates kept
		var out []int
		for _, s := range t.Src {
			if s != nil {
				out = append(out, idx[*s])
			}
		}
		return out
	}
	isView := func(i int) bool { return ts[i].ViewSrc != nil }
	own := func(i int) bool { return ts[i].Buffer == "compute" && !isView(i) }
	var nodes []int
	for i, t := range ts {
		if t.ExecIndex >= 0 {
			nodes = append(nodes, i)
		}
	}
	slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(ts[a].ExecIndex, ts[b].ExecIndex) })
	nSteps := len(nodes) + 1
	children := make([]int, len(ts))
	views := make([]int, len(ts))
	for _, n := range nodes {
		for _, s := range src(&ts[n]) {
			children[s]++
		}
		if isView(n) {
			views[idx[*ts[n].ViewSrc]]++
		}
	}
	// ggml_rules: blocks. block[i] is the block index holding own tensor i.
	type block struct {
		size, aligned int64
		allocStep     int // -1 = before node 0
		members       []int
		freed         int // step after which it is released; nSteps = never
	}
	var blocks []*block
	blockOf := make([]int, len(ts))
	for i := range blockOf {
		blockOf[i] = -1
	}
	allocated := make([]bool, len(ts))
	newBlock := func(i, step int) {
		sz := ts[i].Nbytes
		al := sz
		if ts[i].AllocSize != nil {
			al = *ts[i].AllocSize
		}
		if a := doc.Alignment; a > 0 {
			al = (al + a - 1) / a * a
		}
		blockOf[i] = len(blocks)
		blocks = append(blocks, &block{size: sz, aligned: al, allocStep: step, members: []int{i}, freed: nSteps})
		allocated[i] = true
	}
	for i, t := range ts {
		if t.ExecIndex < 0 || t.IsInput {
			if own(i) && !allocated[i] {
				newBlock(i, -1)
			}
		}
	}
	f := &ggFigures{StepRules: make([]int64, nSteps)}
	aligned := make([]int64, nSteps)
	live := func(step int) (exact, al int64) {
		for _, b := range blocks {
			if b.allocStep <= step && step <= b.freed {
				exact += b.size
				al += b.aligned
			}
		}
		return
	}
	sameLayout := func(a, b int) bool {
		return ts[a].Type == ts[b].Type && slices.Equal(ts[a].Ne, ts[b].Ne) && slices.Equal(ts[a].Nb, ts[b].Nb)
	}
	inplaceDone := make([]bool, len(ts))
	// step index s: -1 before node 0, k after allocating node k; a block
	// freed after node k has freed = k (live at k, not at k+1).
	f.StepRules[0], aligned[0] = live(-1)
	for k, n := range nodes {
		for _, p := range src(&ts[n]) {
			if own(p) && !allocated[p] {
				newBlock(p, k)
			}
		}
		if own(n) && !allocated[n] {
			done := false
			if ggInplaceOps[ts[n].Op] {
				for _, p := range src(&ts[n]) {
					if !own(p) || ts[p].IsOutput || !sameLayout(n, p) || !allocated[p] {
						continue
					}
					if children[p] == 1 && views[p] == 0 {
						b := blockOf[p]
						blockOf[n] = b
						blocks[b].members = append(blocks[b].members, n)
						allocated[p] = false // the node holds the block now
						allocated[n] = true
						inplaceDone[n] = true
						f.InPlace = append(f.InPlace, [2]string{ts[n].Name, ts[p].Name})
						done = true
						break
					}
				}
			}
			if !done {
				newBlock(n, k)
			}
		}
		f.StepRules[k+1], aligned[k+1] = live(k)
		free := func(i int) {
			if allocated[i] && !ts[i].IsOutput {
				allocated[i] = false
				blocks[blockOf[i]].freed = k
			}
		}
		for _, p := range src(&ts[n]) {
			children[p]--
			if children[p] == 0 && views[p] == 0 {
				if isView(p) {
					v := idx[*ts[p].ViewSrc]
					views[v]--
					if views[v] == 0 && children[v] == 0 {
						free(v)
					}
				} else {
					free(p)
				}
			}
		}
	}
	f.RulesExact = slices.Max(f.StepRules)
	f.RulesAligned = slices.Max(aligned)

	// Byte-granular liveness in units of the gcd of every compute offset,
	// stride and size.
	unit := int64(0)
	for i, t := range ts {
		if t.Buffer != "compute" {
			continue
		}
		sz := ggTypeSize[t.Type][0]
		if sz == 0 {
			return nil, fmt.Errorf("tensor %q: type %q", t.Name, t.Type)
		}
		unit = ggGCD(unit, sz)
		unit = ggGCD(unit, t.ViewOffs)
		unit = ggGCD(unit, t.Nbytes)
		for _, nb := range t.Nb {
			unit = ggGCD(unit, nb)
		}
		_ = i
	}
	if unit <= 0 {
		unit = 1
	}
	// lastRead[b][u]: last step reading unit u of block b (-2 = none).
	lastRead := make([][]int32, len(blocks))
	for b, bl := range blocks {
		lr := make([]int32, (bl.size+unit-1)/unit)
		for u := range lr {
			lr[u] = -2
		}
		lastRead[b] = lr
	}
	// footprint calls fn with the units tensor i covers in its block.
	footprint := func(i int, fn func(b int, u int64)) {
		base := i
		offs := int64(0)
		if isView(i) {
			base = idx[*ts[i].ViewSrc]
			offs = ts[i].ViewOffs
		}
		b := blockOf[base]
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
	for k, n := range nodes {
		if ggPureViews[ts[n].Op] {
			continue
		}
		for _, p := range src(&ts[n]) {
			footprint(p, func(b int, u int64) { lastRead[b][u] = int32(k) })
		}
	}
	heldToEnd := make([]bool, len(blocks))
	for i, t := range ts {
		if t.IsOutput {
			base := i
			if isView(i) {
				base = idx[*t.ViewSrc]
			}
			if blockOf[base] >= 0 {
				heldToEnd[blockOf[base]] = true
			}
		}
	}
	diff := make([]int64, nSteps+1)
	lastOf := func(b int, u int64) int {
		if heldToEnd[b] {
			return nSteps - 2
		}
		return max(int(lastRead[b][u]), blocks[b].allocStep)
	}
	for b, bl := range blocks {
		for u := range lastRead[b] {
			w := min(unit, bl.size-int64(u)*unit)
			diff[bl.allocStep+1] += w
			diff[lastOf(b, int64(u))+2] -= w
		}
	}
	f.StepGranular = make([]int64, nSteps)
	var run int64
	for s := range nSteps {
		run += diff[s]
		f.StepGranular[s] = run
	}
	f.Granular = slices.Max(f.StepGranular)
	f.StepElementwise = slices.Clone(f.StepGranular)
	for k, n := range nodes {
		if !ggInplaceOps[ts[n].Op] || inplaceDone[n] || !own(n) {
			continue
		}
		seen := map[[2]int64]bool{}
		var dying int64
		for _, p := range src(&ts[n]) {
			footprint(p, func(b int, u int64) {
				key := [2]int64{int64(b), u}
				if seen[key] || heldToEnd[b] || lastOf(b, u) != k {
					return
				}
				seen[key] = true
				dying += min(unit, blocks[b].size-u*unit)
			})
		}
		f.StepElementwise[k+1] -= min(dying, ts[n].Nbytes)
	}
	f.Elementwise = slices.Max(f.StepElementwise)
	return f, nil
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
