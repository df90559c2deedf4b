package plan

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/replay"
)

// problemFrom decodes fuzz bytes into a small problem: each item takes
// four bytes (size, start, length, cut), the last byte picks concurrency.
func problemFrom(data []byte) *Problem {
	p := &Problem{Align: int64(1) << (len(data) % 3)}
	for len(data) >= 4 && len(p.Items) < 8 {
		size := int64(data[0]%16) + 1
		start := int(data[1] % 8)
		end := start + 1 + int(data[2]%6)
		it := Item{Name: "f", Size: size, Pieces: []Piece{{Lo: 0, Hi: size, Start: start, End: end}}}
		if cut := int64(data[3] % 16); cut > 0 && cut < size {
			it.Pieces = []Piece{{Lo: 0, Hi: cut, Start: start, End: end},
				{Lo: cut, Hi: size, Start: start + int(data[3]%3), End: end + int(data[3]%4)}}
		}
		p.Items = append(p.Items, it)
		data = data[4:]
	}
	if len(data) > 0 && data[0]%2 == 1 && len(p.Items) >= 2 {
		p.Concurrent = []PiecePair{{A: PieceRef{0, 0}, B: PieceRef{len(p.Items) - 1, 0}}}
	}
	return p
}

// FuzzSolve solves arbitrary small problems and checks every placement
// with the slow pairwise oracle; it must never panic or return an invalid
// placement.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{3, 0, 2, 0, 5, 1, 3, 2, 4, 2, 1, 0, 1})
	f.Add([]byte{15, 7, 5, 9, 1, 0, 0, 0, 8, 3, 3, 3, 2, 2, 2, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := problemFrom(data)
		sol, err := Solve(p, SolveOptions{Budget: 20e6})
		if err != nil {
			if !errors.Is(err, ErrInvalidProblem) {
				t.Fatal(err)
			}
			return
		}
		if !slowVerify(p, sol.Offsets) || sol.Height < sol.LowerBound {
			t.Fatalf("invalid placement %v (height %d, bound %d)", sol.Offsets, sol.Height, sol.LowerBound)
		}
	})
}

// FuzzPlanTrace plans arbitrary valid traces and checks each plan with the
// checker (package trace/check); malformed traces must be rejected with an
// error, never a panic.
func FuzzPlanTrace(f *testing.F) {
	for _, path := range []string{"../testdata/split-qkv.json"} {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	var buf bytes.Buffer
	if err := trace.Write(&buf, tracetest.Load(f, ggmlTiny)); err == nil {
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Parse(data)
		if err != nil {
			return
		}
		res, err := Plan(tr, Options{Check: true, Replay: replay.Online})
		if err != nil {
			if errors.Is(err, ErrInvalidTrace) {
				return
			}
			t.Fatal(err)
		}
		checkSafe(t, res)
	})
}
