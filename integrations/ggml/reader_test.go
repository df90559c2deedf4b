package ggml

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/plan"
)

// allocTraceJSON writes the tensors as a ggml-alloc-trace/1 document (the
// fields ggmltrace.Import reads).
func allocTraceJSON(t *testing.T, ts []tensor, align int64) []byte {
	doc := ggmltrace.Document{Format: ggmltrace.Format, Config: "x", Alignment: align}
	for i := range ts {
		x := &ts[i]
		j := ggmltrace.Tensor{Name: x.name, Op: opNames[x.op], Type: typeNames[x.typ], Ne: x.ne[:], Nb: x.nb[:], Nbytes: x.nbytes,
			ViewOffs: x.viewOffs, IsInput: x.input, IsOutput: x.output, Buffer: "weights", ExecIndex: int64(x.exec)}
		if x.kind == kindOwn {
			j.Buffer = "compute"
		}
		if !x.isView() {
			size := x.allocSize
			j.AllocSize = &size
		}
		if x.viewSrc >= 0 {
			j.ViewSrc = &ts[x.viewSrc].name
		}
		for _, s := range x.src {
			if s < 0 {
				j.Src = append(j.Src, nil)
			} else {
				j.Src = append(j.Src, &ts[s].name)
			}
		}
		doc.Tensors = append(doc.Tensors, j)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readTensors(t *testing.T, g *ggmltest.Graph) []tensor {
	sc, err := newScanner(cpuBufferType())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.free()
	if err := sc.scan(g.CGraph()); err != nil {
		t.Fatal(err)
	}
	ts, _ := sc.tensors()
	return ts
}

// TestReadTiny reads ggml-tiny's graph, built here with ggml's ops, and
// gets the trace ggmltrace.Import makes of ggml-alloc's export of the same
// graph (testdata/ggml/ggml-tiny.json, from ggml v0.21.0): the same tensors,
// leaves in ggml's order, the same steps.
func TestReadTiny(t *testing.T) {
	data, err := os.ReadFile("../../testdata/ggml/ggml-tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ggmltrace.Import(data, "ggml-tiny")
	if err != nil {
		t.Fatal(err)
	}
	mg := ggmltest.NewModelGraph(ggmltest.Tiny(), 32, 0)
	defer mg.Free()
	g := mg.Graph
	got, err := ReadGraph(g.CGraph(), ReadOptions{Name: "ggml-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		for i := range min(len(got.Steps), len(want.Steps)) {
			if !got.Steps[i].Equal(want.Steps[i]) {
				t.Fatalf("step %d: got %+v, want %+v", i, got.Steps[i], want.Steps[i])
			}
		}
		t.Fatalf("got %d steps, want %d", len(got.Steps), len(want.Steps))
	}
	var b bytes.Buffer
	if err := Dump(&b, g.CGraph(), ReadOptions{Name: "ggml-tiny"}); err != nil {
		t.Fatal(err)
	}
	back, err := trace.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(want) {
		t.Fatal("Dump does not parse back to the trace")
	}
}

// TestReadMatchesImport reads graphs of every shape the tests build and
// compares the trace with ggmltrace.Import of the same tensors exported as
// ggml-alloc-trace/1; the trace is planned and the plan checked.
func TestReadMatchesImport(t *testing.T) {
	for _, p := range readerShapes() {
		t.Run(p.String(), func(t *testing.T) {
			m := ggmltest.NewModel(p)
			defer m.Free()
			c := m.NewCache()
			defer c.Free()
			for _, step := range [][2]int{{8, 0}, {1, 8}} {
				g := m.Build(c, step[0], step[1])
				ts := readTensors(t, g)
				want, err := ggmltrace.Import(allocTraceJSON(t, ts, 32), "x")
				if err != nil {
					t.Fatal(err)
				}
				got, err := buildTrace(ts, "x", 32, ggmlRule)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(want) {
					t.Fatalf("step %v: the trace differs from ggmltrace.Import's", step)
				}
				res, err := plan.Plan(got, plan.Options{Check: true})
				if err != nil {
					t.Fatal(err)
				}
				prog, _ := got.Resolve()
				rep, err := check.Plan(prog, res.Plan)
				if err != nil || !rep.Safe {
					t.Fatalf("plan rejected: %v %+v", err, rep)
				}
				g.Free()
			}
		})
	}
}

func readerShapes() []ggmltest.Params {
	var out []ggmltest.Params
	for _, arch := range []ggmltest.Arch{ggmltest.LLaMA, ggmltest.GPT2} {
		for _, attn := range []ggmltest.Attn{ggmltest.AttnMaskInf, ggmltest.AttnSoftMax, ggmltest.AttnFlash} {
			for _, seqs := range []int{1, 3} {
				out = append(out, ggmltest.Params{Arch: arch, Embd: 64, Heads: 4, FF: 160, Layers: 2, Vocab: 50,
					Ctx: 16, Seqs: seqs, Attn: attn, Seed: 3, SizeOnly: true})
				if arch == ggmltest.LLaMA {
					out = append(out, ggmltest.Params{Arch: arch, Embd: 64, Heads: 4, FF: 160, Layers: 2, Vocab: 50,
						Ctx: 16, Seqs: seqs, Attn: attn, Seed: 3, SizeOnly: true, Split: true})
				}
			}
		}
	}
	return out
}
