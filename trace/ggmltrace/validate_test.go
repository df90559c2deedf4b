package ggmltrace_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/internal/tracejson"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// ggmlEdit returns tinyDoc with the fields of one tensor replaced (a nil value removes
// the field); the tensor "extra", when named, is appended as a copy of "ht" first.
func ggmlEdit(t *testing.T, tensor string, fields map[string]any) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(tinyDoc(t)))
	dec.UseNumber()
	var doc map[string]any
	require.NoError(t, dec.Decode(&doc))
	tensors := doc["tensors"].([]any)
	if tensor == "extra" {
		c := map[string]any{}
		for k, v := range tensors[3].(map[string]any) {
			c[k] = v
		}
		c["name"] = "extra"
		c["exec_index"] = json.Number("3")
		tensors = append(tensors, c)
		doc["tensors"] = tensors
	}
	found := false
	for _, x := range tensors {
		m := x.(map[string]any)
		if m["name"] != tensor {
			continue
		}
		found = true
		for k, v := range fields {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
	}
	require.True(t, found, "no tensor %q", tensor)
	var b bytes.Buffer
	require.NoError(t, json.NewEncoder(&b).Encode(doc))
	return b.String()
}

// TestGGMLTensorRules: every tensor is checked against ggml's rules before import, so a
// document with impossible shapes, types or sizes is rejected, naming the tensor and the
// rule, instead of becoming a trace that plans as proven.
func TestGGMLTensorRules(t *testing.T) {
	n := func(v int64) json.Number { return json.Number(strconv.FormatInt(v, 10)) }
	ints := func(v ...int64) []json.Number {
		out := make([]json.Number, len(v))
		for i, x := range v {
			out[i] = n(x)
		}
		return out
	}
	const t40 = int64(1) << 40
	cases := []struct {
		name, tensor string
		fields       map[string]any
		rule         string
		is           error
		says         string
	}{
		{"negative ne", "h", map[string]any{"ne": ints(-1, 1, 1, 1)}, ggmltrace.RuleNe, trace.ErrShape, "ne[0] = -1"},
		{"zero ne", "h", map[string]any{"ne": ints(8, 0, 1, 1)}, ggmltrace.RuleNe, trace.ErrShape, "ne[1] = 0"},
		{"element count overflow", "h", map[string]any{"ne": ints(t40, t40, 1, 1)}, "arithmetic overflow", trace.ErrOverflow,
			"element count overflows int64"},
		{"dense strides overflow", "h", map[string]any{"ne": ints(1<<31, 1<<31, 1, 1), "nb": ints(4, 1<<33, 1<<62, 1<<63-1)},
			"arithmetic overflow", trace.ErrOverflow, "byte size overflows int64"},
		{"unknown type", "h", map[string]any{"type": "q9_9"}, ggmltrace.RuleType, trace.ErrFormat, `type "q9_9" is not one of ggml's`},
		{"unknown type of a weight", "w", map[string]any{"type": "f8"}, ggmltrace.RuleType, trace.ErrFormat, `type "f8"`},
		{"ne and nb lengths", "h", map[string]any{"nb": ints(4, 32, 64)}, ggmltrace.RuleDims, trace.ErrShape, "4 ne and 3 nb"},
		{"five dimensions", "h", map[string]any{"ne": ints(8, 2, 1, 1, 1), "nb": ints(4, 32, 64, 64, 64)}, ggmltrace.RuleDims,
			trace.ErrShape, "5 ne and 5 nb"},
		{"no dimensions", "h", map[string]any{"ne": ints(), "nb": ints()}, ggmltrace.RuleDims, trace.ErrShape, "0 ne and 0 nb"},
		{"negative nb", "ht", map[string]any{"nb": ints(-32, 4, 64, 64)}, ggmltrace.RuleNb, trace.ErrShape, "nb[0] = -32 is negative"},
		{"not dense", "h", map[string]any{"nb": ints(4, 36, 72, 72), "nbytes": n(72)}, ggmltrace.RuleNb, trace.ErrShape,
			"is not the dense layout [4 32 64 64]"},
		{"nbytes", "h", map[string]any{"nbytes": n(65)}, ggmltrace.RuleNbytes, trace.ErrInvalidSize, "nbytes = 65, but"},
		{"view nbytes", "ht", map[string]any{"nbytes": n(32)}, ggmltrace.RuleNbytes, trace.ErrInvalidSize, "span 64 bytes"},
		{"alloc_size", "h", map[string]any{"alloc_size": n(32)}, ggmltrace.RuleAllocSize, trace.ErrInvalidSize,
			"alloc_size = 32 is less than nbytes = 64"},
		{"block multiple", "w", map[string]any{"ne": ints(48, 2, 1, 1)}, ggmltrace.RuleBlock, trace.ErrShape,
			"ne[0] = 48 is not a multiple of q4_0's block of 32"},
		{"block bytes", "w", map[string]any{"nb": ints(16, 32, 64, 64)}, ggmltrace.RuleNb, trace.ErrShape, "a q4_0 block takes 18 bytes"},
		{"view past its base", "ht", map[string]any{"view_offs": n(8)}, ggmltrace.RuleViewBounds, trace.ErrOutOfBounds,
			`bytes [8, 8+64) outside view_src "h" of 64 bytes`},
		{"view before its base", "ht", map[string]any{"view_offs": n(-4)}, ggmltrace.RuleViewBounds, trace.ErrOutOfBounds, "[-4, -4+64)"},
		{"view span overflow", "ht", map[string]any{"nb": ints(32, 1<<62, 64, 64)}, "arithmetic overflow", trace.ErrOverflow,
			"span more bytes than int64 counts"},
		{"view of a view", "extra", map[string]any{"view_src": "ht", "src": []string{"ht"}}, ggmltrace.RuleViewSrc, trace.ErrShape,
			`view_src "ht" is itself a view (of "h")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := ggmlEdit(t, c.tensor, c.fields)
			var err error
			require.NotPanics(t, func() { _, err = ggmltrace.Import([]byte(doc), "bad") })
			require.Error(t, err)
			require.ErrorIs(t, err, c.is)
			var te *ggmltrace.TensorError
			require.ErrorAs(t, err, &te)
			require.Equal(t, c.tensor, te.Name)
			require.Equal(t, c.rule, te.Rule)
			require.Contains(t, err.Error(), `tensor `)
			require.Contains(t, err.Error(), tracejson.Quote(c.tensor)+": "+c.rule+": ")
			require.Contains(t, err.Error(), c.says)
		})
	}
}

// TestGGMLTensorRulesAccept: what ggml itself produces passes: an extent-1 dimension's
// stride is free, views may permute strides, a weight may have a type of ggml's newer
// families, alloc_size may exceed nbytes (padded backends) or be null.
func TestGGMLTensorRulesAccept(t *testing.T) {
	for name, doc := range map[string]string{
		"extent-1 stride":   ggmlEdit(t, "h", map[string]any{"nb": []int{4, 32, 64, 999}}),
		"iq4_nl weight":     ggmlEdit(t, "w", map[string]any{"type": "iq4_nl"}),
		"padded alloc_size": ggmlEdit(t, "h", map[string]any{"alloc_size": 96}),
		"null alloc_size":   ggmlEdit(t, "h", map[string]any{"alloc_size": nil}),
		"view at the end":   ggmlEdit(t, "ht", map[string]any{"ne": []int{2, 4, 1, 1}, "nbytes": 48, "view_offs": 16}),
	} {
		_, err := ggmltrace.Import([]byte(doc), "ok")
		require.NoError(t, err, name)
	}
}

// TestGGMLInplaceFillClamp: FILL and CLAMP, which newer ggml runs in place, import as
// inplace ops.
func TestGGMLInplaceFillClamp(t *testing.T) {
	for _, op := range []string{"FILL", "CLAMP"} {
		tr, err := ggmltrace.Import([]byte(ggmlEdit(t, "h", map[string]any{"op": op})), "inplace")
		require.NoError(t, err)
		p := tracetest.Resolve(t, tr)
		k, ok := p.OpIndex("h")
		require.True(t, ok)
		require.True(t, p.Ops[k].InPlace, "%s is not inplace", op)
	}
}

// TestDenseStrides: the strides ggml gives a fresh tensor of each shape and type are
// dense, and permuted, padded or overflowing ones are not.
func TestDenseStrides(t *testing.T) {
	for _, c := range []struct {
		name       string
		ne, nb     []int64
		blck, size int64
		want       bool
	}{
		{"f32 matrix", []int64{4, 3, 1, 1}, []int64{4, 16, 48, 48}, 1, 4, true},
		{"extent 1 takes any stride", []int64{4, 1, 2, 1}, []int64{4, 999, 16, 7}, 1, 4, true},
		{"transposed", []int64{4, 3, 1, 1}, []int64{12, 4, 48, 48}, 1, 4, false},
		{"padded rows", []int64{4, 3, 1, 1}, []int64{4, 20, 60, 60}, 1, 4, false},
		{"q8_0 rows in blocks", []int64{64, 2, 1, 1}, []int64{34, 68, 136, 136}, 32, 34, true},
		{"q8_0 rows in elements", []int64{64, 2, 1, 1}, []int64{34, 64 * 34, 128 * 34, 128 * 34}, 32, 34, false},
		{"no extents", nil, nil, 1, 4, false},
		{"lengths differ", []int64{4, 3}, []int64{4}, 1, 4, false},
		{"no size", []int64{4}, []int64{0}, 1, 0, false},
		{"overflow", []int64{math.MaxInt64 / 2, 1, 1}, []int64{4, 0, 0}, 1, 4, false},
	} {
		if got := ggmltrace.DenseStrides(c.ne, c.nb, c.blck, c.size); got != c.want {
			t.Errorf("%s: DenseStrides(%v, %v, %d, %d) = %v, want %v", c.name, c.ne, c.nb, c.blck, c.size, got, c.want)
		}
	}
}
