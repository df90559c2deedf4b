package block

import (
	"fmt"
	"math"
)

// Result is what a run hands back to the host: everything the two runs are
// compared on.
type Result struct {
	// Tokens are the T+S tokens fed, prompt first (greedy: each decode
	// token is the previous step's Next).
	Tokens []int
	// Logits[s] is the logits row of the last token of step s (S+1 rows of
	// V), as the consumer engine read it.
	Logits [][]float32
	// Next[s] is the argmax of Logits[s].
	Next []int
	// K[l] and V[l] are layer l's KV cache, [T+S, D] row-major, as
	// offloaded to host memory chunk by chunk.
	K, V [][]float32
}

func newResult(c Config) *Result {
	r := &Result{
		Tokens: make([]int, c.Positions()),
		Logits: make([][]float32, c.Steps+1),
		Next:   make([]int, c.Steps+1),
		K:      make([][]float32, c.Layers),
		V:      make([][]float32, c.Layers),
	}
	for s := range r.Logits {
		r.Logits[s] = make([]float32, c.Vocab)
	}
	for l := range c.Layers {
		r.K[l] = make([]float32, c.Positions()*c.Dim)
		r.V[l] = make([]float32, c.Positions()*c.Dim)
	}
	return r
}

// Compare returns nil if got and want are bit-identical (every float
// compared by math.Float32bits, so even NaN payloads must agree), and
// otherwise an error matching ErrMismatch that names the first difference.
func Compare(got, want *Result) error {
	if got == nil || want == nil {
		return fmt.Errorf("%w: missing result", ErrMismatch)
	}
	if err := compareInts("token", got.Tokens, want.Tokens); err != nil {
		return err
	}
	if err := compareInts("argmax", got.Next, want.Next); err != nil {
		return err
	}
	if err := compareRows("logits of step", got.Logits, want.Logits); err != nil {
		return err
	}
	if err := compareRows("K cache of layer", got.K, want.K); err != nil {
		return err
	}
	return compareRows("V cache of layer", got.V, want.V)
}

// Diff counts the float32 values of got's logits whose bits differ from
// want's, and the steps with at least one such value.
func Diff(got, want *Result) (values, steps int) {
	for s := range min(len(got.Logits), len(want.Logits)) {
		d := 0
		for i := range min(len(got.Logits[s]), len(want.Logits[s])) {
			if math.Float32bits(got.Logits[s][i]) != math.Float32bits(want.Logits[s][i]) {
				d++
			}
		}
		values += d
		if d > 0 {
			steps++
		}
	}
	return values, steps
}

func compareInts(what string, got, want []int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d %ss, want %d", ErrMismatch, len(got), what, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%w: %s %d is %d, want %d", ErrMismatch, what, i, got[i], want[i])
		}
	}
	return nil
}

func compareRows(what string, got, want [][]float32) error {
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d rows of %s, want %d", ErrMismatch, len(got), what, len(want))
	}
	for r := range got {
		if len(got[r]) != len(want[r]) {
			return fmt.Errorf("%w: %s %d has %d values, want %d", ErrMismatch, what, r, len(got[r]), len(want[r]))
		}
		for i := range got[r] {
			if g, w := math.Float32bits(got[r][i]), math.Float32bits(want[r][i]); g != w {
				return fmt.Errorf("%w: %s %d, value %d: %v (%#08x), want %v (%#08x)", ErrMismatch, what, r, i, got[r][i], g, want[r][i], w)
			}
		}
	}
	return nil
}
