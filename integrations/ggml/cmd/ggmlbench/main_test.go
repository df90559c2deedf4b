package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// TestREADMESizes measures every graph `ggmlbench -big -sizes` measures and
// compares the repository README's table of buffer sizes (geomean of
// subarena's buffer over gallocr's per kind of graph) and its counts: graphs
// at the planner's proven bound, and graphs on which the online Allocator
// needs exactly gallocr's buffer; the online Allocator needs no more than
// gallocr's buffer on any graph.
func TestREADMESizes(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("plans the LLaMA-7B and GPT-2 small graphs (seconds; a minute under the race detector)")
	}
	data, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(data)), " ") // line breaks fall anywhere
	logs := map[string][]float64{}
	n, atBound, onlineEqual := 0, 0, 0
	for _, sh := range ggmltest.Shapes(true) {
		r, err := measureShape(sh, 0, false, 0, "")
		if err != nil {
			t.Fatalf("%s: %v", sh.Name, err)
		}
		logs[class(sh)] = append(logs[class(sh)], math.Log(float64(r.strided)/float64(r.gallocr)))
		n++
		if r.proven && r.strided == r.bound {
			atBound++
		}
		if r.online == r.gallocr {
			onlineEqual++
		}
		if r.online > r.gallocr {
			t.Errorf("%s: the online Allocator needs %d B, gallocr %d B", sh.Name, r.online, r.gallocr)
		}
	}
	label := map[string]string{
		"llama prefill fused": "LLaMA prefill, fused QKV and gate/up",
		"llama prefill split": "LLaMA prefill, llama.cpp's separate Q/K/V and GLU",
		"llama decode fused":  "LLaMA decode, fused",
		"llama decode split":  "LLaMA decode, llama.cpp's form",
		"gpt2 prefill":        "GPT-2 prefill",
		"gpt2 decode":         "GPT-2 decode",
	}
	for _, c := range classes {
		sum := 0.0
		for _, l := range logs[c] {
			sum += l
		}
		row := fmt.Sprintf("| %s (%d graphs) | %.3f |", label[c], len(logs[c]), math.Exp(sum/float64(len(logs[c]))))
		if !strings.Contains(readme, row) {
			t.Errorf("README lacks the row %q", row)
		}
	}
	for _, says := range []string{
		fmt.Sprintf("measured on %d LLaMA- and GPT-2-style graphs", n),
		fmt.Sprintf("%d of the %d graphs are at the planner's proven lower bound", atBound, n),
		fmt.Sprintf("needs exactly gallocr's buffer on %d of the %d graphs", onlineEqual, n),
	} {
		if !strings.Contains(readme, says) {
			t.Errorf("README does not say %q", says)
		}
	}
}
