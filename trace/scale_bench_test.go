package trace

import (
	"fmt"
	"testing"

	subarena "github.com/subarena/subarena"
)

// The scale benchmarks run replay, check and LiveLB on the generated traces of
// scale_test.go at three sizes, so that growth per 10x size shows in ns/op.

var scaleSizes = []int{1000, 10000, 100000}

func scaleProgram(b *testing.B, gen func(int) []byte, n int) *Program {
	b.Helper()
	tr, err := Parse(gen(n))
	if err != nil {
		b.Fatal(err)
	}
	p, err := tr.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func forScaleShapes(b *testing.B, run func(b *testing.B, p *Program)) {
	for _, sh := range scaleShapes {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("%s/%d", sh.name, n), func(b *testing.B) {
				p := scaleProgram(b, sh.gen, n)
				b.ReportAllocs()
				b.ResetTimer()
				run(b, p)
			})
		}
	}
}

func BenchmarkScaleParse(b *testing.B) {
	for _, sh := range scaleShapes {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("%s/%d", sh.name, n), func(b *testing.B) {
				data := sh.gen(n)
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := Parse(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkScaleReplay(b *testing.B) {
	forScaleShapes(b, func(b *testing.B, p *Program) {
		for b.Loop() {
			if _, err := Replay(p, ReplayOptions{Policy: subarena.SubrangeFenced}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkScaleCheck(b *testing.B) {
	forScaleShapes(b, func(b *testing.B, p *Program) {
		res, err := Replay(p, ReplayOptions{Policy: subarena.SubrangeFenced})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			rep, err := Check(p, res.Plan)
			if err != nil || !rep.Safe {
				b.Fatal(err, rep)
			}
		}
	})
}

func BenchmarkScaleLiveLB(b *testing.B) {
	forScaleShapes(b, func(b *testing.B, p *Program) {
		res, err := Replay(p, ReplayOptions{Policy: subarena.SubrangeFenced})
		if err != nil {
			b.Fatal(err)
		}
		s := Schedule{Start: make([]int64, len(res.OpTimes)), End: make([]int64, len(res.OpTimes)), Makespan: res.Makespan}
		for k, o := range res.OpTimes {
			s.Start[k], s.End[k] = o.Start, o.End
		}
		b.ResetTimer()
		for b.Loop() {
			if lb := LiveLowerBound(p, s); lb != res.LiveLB {
				b.Fatal(lb, res.LiveLB)
			}
		}
	})
}
