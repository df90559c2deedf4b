package ggml

import (
	"slices"
	"testing"

	"github.com/subarena/subarena/integrations/ggml/kernels"
	"github.com/subarena/subarena/trace/ggmltrace"
)

// TestInplaceOpsAreLinkedGGMLs checks that the one list of ops ggml runs
// in place, ggmltrace's (which the importer and the live reader both map
// graphs with), is exactly what the linked release's ggml_op_can_inplace
// says, op by op.
func TestInplaceOpsAreLinkedGGMLs(t *testing.T) {
	linked := linkedInplaceOps()
	ours := ggmltrace.InPlaceOps()
	slices.Sort(linked)
	slices.Sort(ours)
	if len(linked) == 0 || !slices.Equal(linked, ours) {
		t.Errorf("ggml_op_can_inplace lists %v; ggmltrace.InPlaceOps %v", linked, ours)
	}
	for i, name := range opNames {
		if opInplace[i] != ggmltrace.InPlaceOp(name) {
			t.Errorf("opInplace[%s] = %v", name, opInplace[i])
		}
	}
}

// TestInplaceRule builds GLU and NORM nodes by hand and asks the in-place
// rule: ggml's rule runs neither in place; the verified table does, on the
// CPU rule, for two GLU sources (one NORM source) of the output's type and
// ne, all contiguous, and types it lists, and for nothing else; and only
// with the ggml version it was verified on.
func TestInplaceRule(t *testing.T) {
	loadTables()
	saved := verified
	defer func() { verified = saved }()
	if resolveVerified("0.0.0-other") != nil {
		t.Fatal("entries resolved for a ggml version they were not verified on")
	}
	verified = resolveVerified(kernels.GGMLVersion)
	swiglu := int32(-1)
	for _, v := range verified {
		if v.entry.Op == "GLU" && v.entry.Variant == "SWIGLU" {
			swiglu = v.sub
		}
	}
	if swiglu < 0 {
		t.Fatal("the linked ggml resolves no GLU SWIGLU entry")
	}
	glu := int32(slices.Index(opNames, "GLU"))
	f32, f16 := int32(slices.Index(typeNames, "f32")), int32(slices.Index(typeNames, "f16"))
	q8 := int32(slices.Index(typeNames, "q8_0"))
	own := func(typ int32, ne [4]int64) tensor {
		x := tensor{typ: typ, ne: ne, kind: kindOwn, viewSrc: -1, exec: 0}
		x.nb[0] = typeSize[typ]
		x.nb[1] = x.nb[0] * ne[0] / typeBlck[typ]
		x.nb[2], x.nb[3] = x.nb[1]*ne[1], x.nb[1]*ne[1]*ne[2]
		return x
	}
	ne := [4]int64{64, 8, 1, 1}
	type tc struct {
		name string
		ts   []tensor
		want bool
	}
	node := func(out tensor, sub int32, srcs ...tensor) []tensor {
		ts := append([]tensor{}, srcs...)
		out.op, out.sub, out.exec = glu, sub, 1
		for k := range srcs {
			out.src = append(out.src, int32(k))
		}
		return append(ts, out)
	}
	strided := own(f32, ne)
	strided.nb[1] *= 2
	cases := []tc{
		{"swiglu f32", node(own(f32, ne), swiglu, own(f32, ne), own(f32, ne)), true},
		{"swiglu f16", node(own(f16, ne), swiglu, own(f16, ne), own(f16, ne)), true},
		{"swiglu q8_0", node(own(q8, ne), swiglu, own(q8, ne), own(q8, ne)), false},
		{"one source", node(own(f32, [4]int64{32, 8, 1, 1}), swiglu, own(f32, ne)), false},
		{"a source of another ne", node(own(f32, ne), swiglu, own(f32, ne), own(f32, [4]int64{32, 16, 1, 1})), false},
		{"a strided source", node(own(f32, ne), swiglu, own(f32, ne), strided), false},
		{"a strided output", node(strided, swiglu, own(f32, ne), own(f32, ne)), false},
		{"an unlisted variant", node(own(f32, ne), 1000, own(f32, ne), own(f32, ne)), false},
	}
	norm := int32(slices.Index(opNames, "NORM"))
	normNode := func(out tensor, srcs ...tensor) []tensor {
		ts := node(out, 0, srcs...)
		ts[len(ts)-1].op = norm
		return ts
	}
	cases = append(cases,
		tc{"norm f32", normNode(own(f32, ne), own(f32, ne)), true},
		tc{"norm f16", normNode(own(f16, ne), own(f16, ne)), false},
		tc{"norm of a strided source", normNode(own(f32, ne), strided), false},
	)
	for _, c := range cases {
		base := make([]int32, len(c.ts))
		for i := range base {
			base[i] = int32(i)
		}
		i := len(c.ts) - 1
		if inplaceOK(c.ts, base, i, ggmlRule) {
			t.Errorf("%s: in place under ggml's rule", c.name)
		}
		if got := inplaceOK(c.ts, base, i, cpuRule); got != c.want {
			t.Errorf("%s: in place under the CPU rule %v, want %v", c.name, got, c.want)
		}
	}
	verified = nil // another ggml version: nothing beyond ggml's list
	if c := cases[0]; inplaceOK(c.ts, []int32{0, 1, 2}, 2, cpuRule) {
		t.Error("GLU in place with no verified entries")
	}
}
