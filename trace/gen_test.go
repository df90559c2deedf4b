package trace

import (
	"math/rand/v2"

	"github.com/subarena/subarena/trace/internal/tracegen"
)

// randomTrace returns a valid random trace (tracegen.Random read back).
func randomTrace(rng *rand.Rand, steps int) *Trace {
	t, err := Parse(tracegen.Random(rng, steps))
	if err != nil {
		panic("tracegen wrote an invalid trace: " + err.Error())
	}
	return t
}
