package check

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

// The test helpers this package shares with package trace's tests, on the format's
// exported API.

// sharedData is the repository's third-party test data (see testdata/README.md),
// relative to this package.
const sharedData = "../../testdata"

func parseProgram(t *testing.T, doc string) *trace.Program {
	t.Helper()
	tr, err := trace.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tracetest.Resolve(t, tr)
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

// scaleSizes are the sizes of the generated traces the scale benchmarks run at, so that
// growth per 10x size shows in ns/op.
var scaleSizes = []int{1000, 10000, 100000}

func forScaleShapes(b *testing.B, run func(b *testing.B, p *trace.Program)) {
	for _, sh := range scalegen.Shapes {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				tr, err := trace.Parse(sh.Gen(n))
				if err != nil {
					b.Fatal(err)
				}
				p := tracetest.Resolve(b, tr)
				b.ReportAllocs()
				b.ResetTimer()
				run(b, p)
			})
		}
	}
}
