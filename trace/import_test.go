package trace

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestMiniMallocImport(t *testing.T) {
	tr, err := ImportMiniMalloc([]byte("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"), "input.12")
	if err != nil {
		t.Fatal(err)
	}
	p := mustResolve(t, tr)
	// One op per distinct lower value (0, 3, 9), granule 4 (sizes are 4).
	if len(p.Ops) != 3 || tr.Granule != 4 || p.Ops[0].Name != "t0" || p.Ops[2].Name != "t9" {
		t.Fatalf("ops %v granule %d", p.Ops, tr.Granule)
	}
	// b3 lives [0, 9): written by t0, read by t3 (the last lower below 9), released after it.
	b3, _ := p.Lookup("b3")
	rel := p.Buffers[b3.Buffer].Release
	last := rel - 1
	for tr.Steps[last].Kind != KindOp {
		last--
	}
	if tr.Steps[last].Name != "t3" || !contains(tr.Steps[last].Reads, "b3") {
		t.Fatalf("b3 released after %q", tr.Steps[last].Name)
	}
}

func TestMiniMallocErrors(t *testing.T) {
	cases := map[string]error{
		"":                                                  ErrSyntax,
		"id,lower,size\n":                                   ErrMissingKey,
		"id,id,lower,upper,size\n":                          ErrSyntax,
		"id,lower,upper,size\na,0,1\n":                      ErrSyntax,
		"id,lower,upper,size\na,0,x,1\n":                    ErrSyntax,
		"id,lower,upper,size\na,0,1,0\n":                    ErrInvalidSize,
		"id,lower,upper,size\na,5,5,1\n":                    ErrInvalidSize,
		"id,lower,upper,size\na,0,1,1\na,1,2,1":             ErrDuplicateName,
		"id,lower,upper,size\na,0,99999999999999999999,1\n": ErrOverflow,
		"id,lower,end,size\na,0,9223372036854775807,1\n":    ErrOverflow,
		"id,lower,upper,size,gaps\na,0,1,1,1-2@3\n":         ErrSyntax,
		"id,lower,upper,size,alignment\na,0,1,1,0\n":        ErrInvalidSize,
		"id,lower,upper,size,alignment\na,0,1,16,3\n":       ErrInvalidGranule,
		"id,lower,upper,size\n\xff,0,1,1\n":                 ErrSyntax,
		"id,lower,upper,size\n,0,1,1\n":                     ErrInvalidName,
	}
	for csv, want := range cases {
		if _, err := ImportMiniMalloc([]byte(csv), "x"); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", csv, err, want)
		}
	}
}

const ggmlDoc = `{"format": "ggml-alloc-trace/1", "config": "t", "alignment": 32, "tensors": [
	{"name": "w", "op": "NONE", "type": "q4_0", "ne": [64, 2, 1, 1], "nb": [18, 36, 72, 72], "nbytes": 72, "alloc_size": 72, "src": [], "view_src": null, "view_offs": 0, "is_input": false, "is_output": false, "buffer": "weights", "exec_index": -1},
	{"name": "in", "op": "NONE", "type": "f32", "ne": [8, 2, 1, 1], "nb": [4, 32, 64, 64], "nbytes": 64, "alloc_size": 64, "src": [], "view_src": null, "view_offs": 0, "is_input": true, "is_output": false, "buffer": "compute", "exec_index": -1},
	{"name": "h", "op": "MUL", "type": "f32", "ne": [8, 2, 1, 1], "nb": [4, 32, 64, 64], "nbytes": 64, "alloc_size": 64, "src": ["in", null, "in"], "view_src": null, "view_offs": 0, "is_input": false, "is_output": false, "buffer": "compute", "exec_index": 0},
	{"name": "ht", "op": "TRANSPOSE", "type": "f32", "ne": [2, 8, 1, 1], "nb": [32, 4, 64, 64], "nbytes": 64, "alloc_size": null, "src": ["h"], "view_src": "h", "view_offs": 0, "is_input": false, "is_output": false, "buffer": "compute", "exec_index": 1},
	{"name": "out", "op": "CONT", "type": "f32", "ne": [2, 8, 1, 1], "nb": [4, 8, 64, 64], "nbytes": 64, "alloc_size": 64, "src": ["ht"], "view_src": null, "view_offs": 0, "is_input": false, "is_output": true, "buffer": "compute", "exec_index": 2}]}`

func TestGGMLImport(t *testing.T) {
	tr, err := Read(strings.NewReader(ggmlDoc), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	p := mustResolve(t, tr)
	if tr.Granule != 32 || len(p.Ops) != 2 || p.Ops[0].Name != "h" || !p.Ops[0].Inplace || p.Ops[1].Inplace {
		t.Fatalf("%s", Marshal(tr))
	}
	if len(p.Ops[0].Uses) != 2 { // "in" once (deduplicated), "h" written
		t.Fatalf("uses %+v", p.Ops[0].Uses)
	}
	ht, _ := p.Lookup("ht")
	if l := p.Layout(ht); !slices.Equal(l.Shape, []int64{1, 1, 8, 2}) || !slices.Equal(l.Strides, []int64{64, 64, 4, 32}) || l.Elem != 4 {
		t.Fatalf("ht layout %v", l)
	}
	w, _ := p.Lookup("w")
	if !p.Buffers[w.Buffer].External || p.Buffers[w.Buffer].Size != 72 {
		t.Fatalf("weights %+v", p.Buffers[w.Buffer])
	}
	in, _ := p.Lookup("in")
	h, _ := p.Lookup("h")
	out, _ := p.Lookup("out")
	// in is released after h (its last user), h after out (reads it through ht); out is an
	// output and stays.
	if p.Buffers[in.Buffer].Release != p.Ops[0].Step+1 || p.Buffers[h.Buffer].Release != p.Ops[1].Step+1 ||
		p.Buffers[out.Buffer].Release != -1 {
		t.Fatalf("releases %d %d %d\n%s", p.Buffers[in.Buffer].Release, p.Buffers[h.Buffer].Release,
			p.Buffers[out.Buffer].Release, Marshal(tr))
	}
	for _, bad := range []string{
		strings.Replace(ggmlDoc, `"alignment": 32`, `"alignment": 24`, 1),
		strings.Replace(ggmlDoc, `"ggml-alloc-trace/1"`, `"ggml-alloc-trace/9"`, 1),
		strings.Replace(ggmlDoc, `"src": ["ht"]`, `"src": ["nope"]`, 1),
		strings.Replace(ggmlDoc, `"view_src": "h"`, `"view_src": null`, 1),
		strings.Replace(ggmlDoc, `"name": "out"`, `"name": "h"`, 1),
	} {
		if _, err := Read(strings.NewReader(bad), "bad"); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// TestReadProgram: ReadProgram and LoadProgram give, for each format, the Program that
// Read and Resolve give, and Read's error for bad input.
func TestReadProgram(t *testing.T) {
	docs := map[string]string{
		"trace":      string(Marshal(&Trace{Name: "x", Granule: 256, Engines: []string{"e"}, Steps: []Step{{Kind: KindAlloc, Name: "a", Size: 8, Engine: "e"}, {Kind: KindOp, Name: "w", Engine: "e", Writes: []string{"a"}, Cost: 1}}})),
		"ggml":       ggmlDoc,
		"minimalloc": "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n",
		"bad":        `{"format": "subarena-trace/v1", "engines": ["e"], "steps": [{"op": "o", "reads": ["nope"]}]}`,
	}
	dir := t.TempDir()
	for name, doc := range docs {
		tr, err := Read(strings.NewReader(doc), name)
		p, perr := ReadProgram(strings.NewReader(doc), name)
		path := dir + "/" + name + ".in"
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		lp, lerr := LoadProgram(path)
		if name == "bad" {
			if err == nil || perr == nil || lerr == nil || err.Error() != perr.Error() || err.Error() != lerr.Error() {
				t.Fatalf("bad: errors %v / %v / %v", err, perr, lerr)
			}
			continue
		}
		if err != nil || perr != nil || lerr != nil {
			t.Fatalf("%s: %v / %v / %v", name, err, perr, lerr)
		}
		want := mustResolve(t, tr)
		for _, got := range []*Program{p, lp} {
			if !reflect.DeepEqual(got.Trace, want.Trace) || !reflect.DeepEqual(got.Ops, want.Ops) ||
				!reflect.DeepEqual(got.Buffers, want.Buffers) || !reflect.DeepEqual(got.Views, want.Views) {
				t.Fatalf("%s: program differs from Read + Resolve", name)
			}
		}
	}
}

// TestManyKeysDuplicate: an object of many keys (a plan's offsets) finds a duplicate key
// as an object of few does, wherever it comes.
func TestManyKeysDuplicate(t *testing.T) {
	for _, n := range []int{3, 40} {
		for _, dup := range []int{1, n - 1} {
			var b strings.Builder
			b.WriteString(`{"format": "subarena-plan/v1", "trace": "t", "size": 256, "offsets": {`)
			for i := range n {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, `"b%d": 0`, i)
			}
			fmt.Fprintf(&b, `, "b%d": 0}}`, dup)
			if _, err := ParsePlan([]byte(b.String())); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("duplicate key \"b%d\"", dup)) {
				t.Fatalf("%d keys, b%d twice: %v", n, dup, err)
			}
			ok := strings.Replace(b.String(), fmt.Sprintf(`, "b%d": 0}}`, dup), "}}", 1)
			if p, err := ParsePlan([]byte(ok)); err != nil || len(p.Offsets) != n {
				t.Fatalf("%d keys: %v", n, err)
			}
		}
	}
}
