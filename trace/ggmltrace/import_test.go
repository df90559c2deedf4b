package ggmltrace_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// tinyDoc returns testdata/tiny.json, a small ggml-alloc-trace/1 document: weights, an
// input, an in-place MUL, a TRANSPOSE view of its output and a CONT reading it.
func tinyDoc(tb testing.TB) string {
	tb.Helper()
	return string(testutil.Read(tb, "testdata", "tiny.json"))
}

func TestGGMLImport(t *testing.T) {
	ggmlDoc := tinyDoc(t)
	tr, err := ggmltrace.Import([]byte(ggmlDoc), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	p := tracetest.Resolve(t, tr)
	if tr.Granule != 32 || len(p.Ops) != 2 || p.Ops[0].Name != "h" || !p.Ops[0].InPlace || p.Ops[1].InPlace {
		t.Fatalf("%s", trace.Marshal(tr))
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
			p.Buffers[out.Buffer].Release, trace.Marshal(tr))
	}
	for _, bad := range []string{
		strings.Replace(ggmlDoc, `"alignment": 32`, `"alignment": 24`, 1),
		strings.Replace(ggmlDoc, `"ggml-alloc-trace/1"`, `"ggml-alloc-trace/9"`, 1),
		strings.Replace(ggmlDoc, `"src": ["ht"]`, `"src": ["nope"]`, 1),
		strings.Replace(ggmlDoc, `"view_src": "h"`, `"view_src": null`, 1),
		strings.Replace(ggmlDoc, `"name": "out"`, `"name": "h"`, 1),
	} {
		if _, err := ggmltrace.Import([]byte(bad), "bad"); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
