package ggmltest

import "fmt"

// ModelGraph is a model, its KV cache and one graph built from them.
type ModelGraph struct {
	Model *Model
	Cache *Cache
	Graph *Graph
}

// NewModelGraph makes the weights of p and a zeroed KV cache, and builds the
// graph of a step of tokens new tokens per sequence after past cached ones.
func NewModelGraph(p Params, tokens, past int) *ModelGraph {
	m := NewModel(p)
	c := m.NewCache()
	return &ModelGraph{Model: m, Cache: c, Graph: m.Build(c, tokens, past)}
}

// Free releases the graph, the cache and the weights.
func (mg *ModelGraph) Free() {
	mg.Graph.Free()
	mg.Cache.Free()
	mg.Model.Free()
}

// DiffBytes returns the number of bytes at which a and b differ, or the
// longer length when their lengths differ.
func DiffBytes(a, b []byte) int {
	if len(a) != len(b) {
		return max(len(a), len(b))
	}
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// Case is a model run over a schedule of steps on a backend of Threads
// threads: a prefill of Prompt tokens, then Decode single-token steps.
type Case struct {
	Params                  Params
	Prompt, Decode, Threads int
}

func (c Case) String() string {
	return fmt.Sprintf("%v-p%d-d%d-t%d", c.Params, c.Prompt, c.Decode, c.Threads)
}

// Steps returns the schedule as {tokens, past} per step.
func (c Case) Steps() [][2]int {
	s := [][2]int{{c.Prompt, 0}}
	for i := range c.Decode {
		s = append(s, [2]int{1, c.Prompt + i})
	}
	return s
}
