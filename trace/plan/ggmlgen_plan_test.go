package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/subarena/subarena/trace"
)

// ggTinyParams is ggml-tiny's shape: the generator must rebuild that graph.
var ggTinyParams = ggParams{Arch: ggLLaMA, Layers: 2, Embd: 256, FF: 688, Head: 4, Tokens: 32, FusedQKV: true, FusedGateUp: true}

// ggSpread is the set of generated graphs the planner is held to: both
// architectures, fused and separate projections, decode and prefill.
var ggSpread = []ggParams{
	ggTinyParams,
	{Arch: ggLLaMA, Layers: 1, Embd: 64, FF: 176, Head: 2, Tokens: 1, Past: 7, FusedQKV: true, FusedGateUp: true},
	{Arch: ggLLaMA, Layers: 2, Embd: 128, FF: 344, Head: 4, Tokens: 1, Past: 31, FusedGateUp: true},
	{Arch: ggLLaMA, Layers: 3, Embd: 128, FF: 352, Head: 2, Tokens: 16, FusedQKV: true},
	{Arch: ggLLaMA, Layers: 2, Embd: 192, FF: 512, Head: 3, Tokens: 24, Past: 8},
	{Arch: ggLLaMA, Layers: 2, Embd: 256, FF: 688, Head: 8, Tokens: 64, FusedQKV: true, FusedGateUp: true, LMHead: true, Vocab: 1000},
	{Arch: ggLLaMA, Layers: 4, Embd: 96, FF: 256, Head: 3, Tokens: 8, Past: 4, FusedQKV: true, FusedGateUp: true},
	{Arch: ggLLaMA, Layers: 2, Embd: 512, FF: 1376, Head: 8, Tokens: 1, Past: 63, FusedQKV: true, FusedGateUp: true, LMHead: true, Vocab: 2000},
	{Arch: ggGPT2, Layers: 1, Embd: 64, FF: 256, Head: 2, Tokens: 1, Past: 5},
	{Arch: ggGPT2, Layers: 2, Embd: 128, FF: 512, Head: 4, Tokens: 32},
	{Arch: ggGPT2, Layers: 3, Embd: 96, FF: 384, Head: 3, Tokens: 12, Past: 20, LMHead: true, Vocab: 500},
	{Arch: ggGPT2, Layers: 2, Embd: 256, FF: 1024, Head: 4, Tokens: 1, Past: 40},
}

func ggGen(t testing.TB, p ggParams) []byte {
	t.Helper()
	data, err := ggGenerate(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGGMLGeneratorTiny rebuilds ggml-tiny from its parameters: every
// tensor ggml recorded has its twin in the generated graph with the same
// op, type, layout, sources, view base and buffer, and the calculator gives
// both graphs the same figures.
func TestGGMLGeneratorTiny(t *testing.T) {
	real, err := os.ReadFile(ggmlTiny)
	if err != nil {
		t.Fatal(err)
	}
	gen := ggGen(t, ggTinyParams)
	type tensor struct {
		Name      string    `json:"name"`
		Op        string    `json:"op"`
		OpDesc    string    `json:"op_desc"`
		Type      string    `json:"type"`
		Ne        []int64   `json:"ne"`
		Nb        []int64   `json:"nb"`
		Nbytes    int64     `json:"nbytes"`
		AllocSize *int64    `json:"alloc_size"`
		Src       []*string `json:"src"`
		ViewSrc   *string   `json:"view_src"`
		ViewOffs  int64     `json:"view_offs"`
		IsLeaf    bool      `json:"is_leaf"`
		IsInput   bool      `json:"is_input"`
		IsOutput  bool      `json:"is_output"`
		IsView    bool      `json:"is_view"`
		Buffer    string    `json:"buffer"`
		ExecIndex int       `json:"exec_index"`
	}
	read := func(data []byte) map[string]string {
		var doc struct {
			Tensors []tensor `json:"tensors"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, x := range doc.Tensors {
			b, _ := json.Marshal(x)
			out[x.Name] = string(b)
		}
		return out
	}
	rt, gt := read(real), read(gen)
	if len(rt) != len(gt) {
		t.Errorf("%d tensors, ggml-tiny has %d", len(gt), len(rt))
	}
	for name, want := range rt {
		if got := gt[name]; got != want {
			t.Errorf("tensor %s:\n got %s\nwant %s", name, got, want)
		}
	}
	fr, err := ggmlAnalyze(real)
	if err != nil {
		t.Fatal(err)
	}
	fg, err := ggmlAnalyze(gen)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Elementwise != fg.Elementwise || fr.Granular != fg.Granular || fr.RulesExact != fg.RulesExact ||
		!slices.Equal(fr.StepElementwise, fg.StepElementwise) {
		t.Errorf("figures differ: ggml-tiny %d/%d/%d, generated %d/%d/%d", fr.RulesExact, fr.Granular, fr.Elementwise,
			fg.RulesExact, fg.Granular, fg.Elementwise)
	}
}

// TestGGMLGeneratedImport: the importer accepts every generated graph, with
// one alloc per own compute tensor and one op per non-view node, and the
// online replay (which reproduces ggml-alloc's placement on its own
// traces) stays within ggml's whole-block figure rounded to the granule
// per block.
func TestGGMLGeneratedImport(t *testing.T) {
	for _, p := range ggSpread {
		data := ggGen(t, p)
		tr, err := trace.Read(bytes.NewReader(data), "gen")
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		var doc struct {
			Tensors []ggTensorIn `json:"tensors"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var allocs, ops, gotAllocs, gotOps int
		for _, x := range doc.Tensors {
			if x.Buffer == "compute" && x.ViewSrc == nil {
				allocs++
			}
			if x.Exec >= 0 && !ggPureViews[x.Op] {
				ops++
			}
		}
		for _, s := range tr.Steps {
			switch s.Kind {
			case trace.KindAlloc:
				gotAllocs++
			case trace.KindOp:
				gotOps++
			}
		}
		if allocs != gotAllocs || ops != gotOps {
			t.Errorf("%v: %d allocs, %d ops; want %d, %d", p, gotAllocs, gotOps, allocs, ops)
		}
		f, err := ggmlAnalyze(data)
		if err != nil {
			t.Fatal(err)
		}
		if !(f.Elementwise <= f.Granular && f.Granular <= f.RulesExact && f.RulesExact <= f.RulesAligned) || f.Elementwise <= 0 {
			t.Errorf("%v: figures out of order: %+v", p, f)
		}
	}
}

// TestPlanGGMLGenerated holds the planner to the bound on every generated
// graph: no larger than the calculator's subrange elementwise in-place
// figure, safe under the checker (placements included), and no worse than
// the online replay.
func TestPlanGGMLGenerated(t *testing.T) {
	for _, p := range ggSpread {
		data := ggGen(t, p)
		f, err := ggmlAnalyze(data)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(bytes.NewReader(data), "gen")
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		res, err := Plan(tr, Options{Budget: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		checkSafe(t, res)
		t.Logf("%-36v bound %9d  plan %9d  replay %9d  ggml-rules %9d  %-14s %v",
			p, f.Elementwise, res.Plan.Size, res.ReplayHWM, f.RulesAligned, res.Method, res.Elapsed.Round(time.Millisecond))
		if res.Plan.Size > f.Elementwise {
			t.Errorf("%v: plan %d above the bound %d", p, res.Plan.Size, f.Elementwise)
		}
		if res.ReplayHWM == 0 || res.Plan.Size > res.ReplayHWM {
			t.Errorf("%v: plan %d, replay %d", p, res.Plan.Size, res.ReplayHWM)
		}
	}
}
