package replay

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/subarena/subarena/trace"

	"github.com/subarena/subarena/trace/internal/scalegen"
	"github.com/subarena/subarena/trace/internal/testfiles"
	"github.com/subarena/subarena/trace/internal/tracegen"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/tracefile"
)

// sharedData is the repository's third-party test data (see testdata/README.md),
// relative to this package.
const sharedData = "../../testdata"

// sharedFiles returns the files matching pattern under sharedData (testfiles.Glob).
func sharedFiles(t *testing.T, pattern string) []string {
	t.Helper()
	return testfiles.Glob(t, sharedData, pattern)
}

// randomTrace returns a valid random trace (tracegen.Random read back).
func randomTrace(rng *rand.Rand, steps int) *trace.Trace {
	t, err := trace.Parse(tracegen.Random(rng, steps))
	if err != nil {
		panic("tracegen wrote an invalid trace: " + err.Error())
	}
	return t
}

func benchProgram(b *testing.B, rel string) *trace.Program {
	b.Helper()
	tr, err := tracefile.Read(bytes.NewReader(testfiles.Read(b, sharedData, rel)), filepath.Base(rel))
	if err != nil {
		b.Fatal(err)
	}
	return tracetest.Resolve(b, tr)
}

// forScaleShapes runs run on every generated shape at the sizes of trace's scale
// benchmarks, so that growth per 10x size shows in ns/op.
func forScaleShapes(b *testing.B, run func(b *testing.B, p *trace.Program)) {
	for _, sh := range scalegen.Shapes {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				tr, err := trace.Parse(sh.Gen(n))
				if err != nil {
					b.Fatal(err)
				}
				p, err := tr.Resolve()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				run(b, p)
			})
		}
	}
}
