package fuzz

import (
	"bytes"
	"errors"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
	"github.com/subarena/subarena/trace/tracefile"
)

// traceSeeds are small documents of every format tracefile.Read understands, plus broken ones.
var traceSeeds = []string{
	`{"format": "subarena-trace/v1", "name": "split", "granule": 256, "engines": ["compute", "copy"], "steps": [
		{"alloc": "qkv", "size": 3072, "engine": "compute"},
		{"op": "proj", "engine": "compute", "writes": ["qkv"], "cost": 4},
		{"view": "q", "of": "qkv", "offset": 0, "shape": [4, 64], "strides": [768, 4], "elem": 4},
		{"view": "v", "of": "qkv", "offset": 512, "shape": [4, 64], "strides": [768, 4], "elem": 4},
		{"view": "vt", "of": "v", "offset": 0, "shape": [64, 4], "strides": [4, 768], "elem": 4},
		{"op": "scores", "engine": "compute", "reads": ["q"], "cost": 2},
		{"op": "offload", "engine": "copy", "waits": ["proj"], "reads": ["vt"], "cost": 20},
		{"release": "q"},
		{"release": "qkv"},
		{"alloc": "tmp", "size": 1024, "engine": "compute", "shape": [256], "elem": 4},
		{"op": "use", "engine": "compute", "reads": ["tmp"], "writes": ["tmp"], "cost": 1, "inplace": true},
		{"sync": "offload"},
		{"external": "w", "size": 64},
		{"release": "tmp"}]}`,
	`{"format": "subarena-trace/v1", "engines": ["e"], "steps": [{"alloc": "a", "size": 1}, {"op": "o", "writes": ["a"]}]}`,
	`{"format": "subarena-trace/v1", "engines": ["e"], "steps": [{"view": "v", "of": "a", "shape": [2], "strides": [-1], "elem": 1}]}`,
	"id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n",
	"buffer,start,end,size,alignment,gaps,offset\nx,0,4,64,32,1-2@0:32,0\ny,2,6,32,1,,64\n",
	`{"format": "ggml-alloc-trace/1", "alignment": 32, "tensors": [
		{"name": "in", "op": "NONE", "type": "f32", "ne": [8, 2, 1, 1], "nb": [4, 32, 64, 64], "nbytes": 64, "alloc_size": 64, "src": [], "view_src": null, "view_offs": 0, "is_input": true, "is_output": false, "buffer": "compute", "exec_index": -1},
		{"name": "w", "op": "NONE", "type": "f16", "ne": [8, 1, 1, 1], "nb": [2, 16, 16, 16], "nbytes": 16, "alloc_size": 16, "src": [], "view_src": null, "view_offs": 0, "is_input": false, "is_output": false, "buffer": "weights", "exec_index": -1},
		{"name": "h", "op": "MUL", "type": "f32", "ne": [8, 2, 1, 1], "nb": [4, 32, 64, 64], "nbytes": 64, "alloc_size": 64, "src": ["in", "w"], "view_src": null, "view_offs": 0, "is_input": false, "is_output": false, "buffer": "compute", "exec_index": 0},
		{"name": "ht", "op": "TRANSPOSE", "type": "f32", "ne": [2, 8, 1, 1], "nb": [32, 4, 64, 64], "nbytes": 64, "alloc_size": null, "src": ["h"], "view_src": "h", "view_offs": 0, "is_input": false, "is_output": false, "buffer": "compute", "exec_index": 1},
		{"name": "out", "op": "CONT", "type": "f32", "ne": [2, 8, 1, 1], "nb": [4, 8, 64, 64], "nbytes": 64, "alloc_size": 64, "src": ["ht"], "view_src": null, "view_offs": 0, "is_input": false, "is_output": true, "buffer": "compute", "exec_index": 2}]}`,
	`{"format": "subarena-trace/v1", "engines": ["e"], "steps": [{"alloc": "a", "size": 9223372036854775807}]}`,
	`{"format": "subarena-trace/v1", "engines": [], "steps": []}`,
	`{"format": "subarena-trace/v1", "Engines": ["e"], "steps": []}`,
	`not a trace`,
}

// FuzzTraceParse feeds arbitrary bytes to tracefile.Read (which detects subarena JSON,
// MiniMalloc CSV and ggml traces). No input may panic; an accepted trace must survive
// write → parse unchanged and write the same bytes twice; a rejected subarena document
// must say which step and rule it broke; and a small accepted trace must replay under a
// safe policy to a plan that check.Plan accepts.
func FuzzTraceParse(f *testing.F) {
	for _, s := range traceSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := tracefile.Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			var se *trace.StepError
			if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`{"format": "subarena-trace/v1"`)) && !errors.As(err, &se) {
				t.Fatalf("subarena document rejected without a *StepError: %v", err)
			}
			return
		}
		out := trace.Marshal(tr)
		again, err := trace.Parse(out)
		if err != nil {
			t.Fatalf("written trace does not parse: %v\n%s", err, out)
		}
		if !again.Equal(tr) {
			t.Fatalf("parse → write → parse differs\n%s", out)
		}
		if second := trace.Marshal(again); !bytes.Equal(second, out) {
			t.Fatalf("second write differs:\n%s\n%s", out, second)
		}
		p, err := tr.Resolve()
		if err != nil {
			t.Fatalf("accepted trace does not resolve: %v", err)
		}
		if len(tr.Steps) > 64 || len(tr.Engines) > 16 {
			return
		}
		for _, b := range p.Buffers {
			if b.Size > 1<<20 {
				return // keep each input cheap; sizes do not change the logic
			}
		}
		res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced, CheckInvariants: true})
		if err != nil {
			t.Fatalf("replay of a valid trace failed: %v\n%s", err, out)
		}
		rep, err := check.Plan(p, res.Plan)
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		if !rep.Safe {
			t.Fatalf("subrange-fenced plan is unsafe: %s\n%s", rep.Violations[0].String(), out)
		}
	})
}
