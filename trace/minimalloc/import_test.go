package minimalloc_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/minimalloc"
)

func TestMiniMallocImport(t *testing.T) {
	tr, err := minimalloc.Import([]byte("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"), "input.12")
	if err != nil {
		t.Fatal(err)
	}
	p := tracetest.Resolve(t, tr)
	// One op per distinct lower value (0, 3, 9), granule 4 (sizes are 4).
	if len(p.Ops) != 3 || tr.Granule != 4 || p.Ops[0].Name != "t0" || p.Ops[2].Name != "t9" {
		t.Fatalf("ops %v granule %d", p.Ops, tr.Granule)
	}
	// b3 lives [0, 9): written by t0, read by t3 (the last lower below 9), released after it.
	b3, _ := p.Lookup("b3")
	rel := p.Buffers[b3.Buffer].Release
	last := rel - 1
	for tr.Steps[last].Kind != trace.KindOp {
		last--
	}
	if tr.Steps[last].Name != "t3" || !slices.Contains(tr.Steps[last].Reads, "b3") {
		t.Fatalf("b3 released after %q", tr.Steps[last].Name)
	}
}

func TestMiniMallocErrors(t *testing.T) {
	cases := map[string]error{
		"":                                                  trace.ErrSyntax,
		"id,lower,size\n":                                   trace.ErrMissingKey,
		"id,id,lower,upper,size\n":                          trace.ErrSyntax,
		"id,lower,upper,size\na,0,1\n":                      trace.ErrSyntax,
		"id,lower,upper,size\na,0,x,1\n":                    trace.ErrSyntax,
		"id,lower,upper,size\na,0,1,0\n":                    trace.ErrInvalidSize,
		"id,lower,upper,size\na,5,5,1\n":                    trace.ErrInvalidSize,
		"id,lower,upper,size\na,0,1,1\na,1,2,1":             trace.ErrDuplicateName,
		"id,lower,upper,size\na,0,99999999999999999999,1\n": trace.ErrOverflow,
		"id,lower,end,size\na,0,9223372036854775807,1\n":    trace.ErrOverflow,
		"id,lower,upper,size,gaps\na,0,1,1,1-2@3\n":         trace.ErrSyntax,
		"id,lower,upper,size,alignment\na,0,1,1,0\n":        trace.ErrInvalidSize,
		"id,lower,upper,size,alignment\na,0,1,16,3\n":       trace.ErrInvalidGranule,
		"id,lower,upper,size\n\xff,0,1,1\n":                 trace.ErrSyntax,
		"id,lower,upper,size\n,0,1,1\n":                     trace.ErrInvalidName,
	}
	for csv, want := range cases {
		if _, err := minimalloc.Import([]byte(csv), "x"); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", csv, err, want)
		}
	}
}
