package replay_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
)

// waitReuseTrace: a's bytes are read by a quick copy-engine op while the
// compute engine runs a long op; the host learns of no completion before
// it allocates b on compute, whose first op queues behind the long one. So
// the read ends (time 3) before b's op can start (time 10): b may take a's
// bytes and wait for the read at no cost.
const waitReuseTrace = `{
  "format": "subarena-trace/v1",
  "name": "wait-reuse",
  "granule": 256,
  "engines": ["compute", "copy"],
  "steps": [
    {"alloc": "a", "size": 4096, "engine": "compute"},
    {"op": "fill", "engine": "compute", "writes": ["a"], "cost": 1},
    {"op": "offload", "engine": "copy", "waits": ["fill"], "reads": ["a"], "cost": 2},
    {"release": "a"},
    {"alloc": "long_out", "size": 256, "engine": "compute"},
    {"op": "long", "engine": "compute", "writes": ["long_out"], "cost": 9},
    {"alloc": "b", "size": 4096, "engine": "compute"},
    {"op": "use_b", "engine": "compute", "writes": ["b"], "cost": 1},
    {"release": "b"},
    {"release": "long_out"}
  ]
}`

func TestWaitReuse(t *testing.T) {
	tr, err := trace.Parse([]byte(waitReuseTrace))
	require.NoError(t, err)
	p, err := tr.Resolve()
	require.NoError(t, err)
	for _, pol := range []subarena.Policy{subarena.SubrangeFenced, subarena.WholeFenced} {
		base, err := replay.Run(p, replay.Options{Policy: pol})
		require.NoError(t, err)
		wr, err := replay.Run(p, replay.Options{Policy: pol, WaitReuse: true, CheckInvariants: true})
		require.NoError(t, err)
		require.Nil(t, base.AddedWaits)
		require.Equal(t, int64(4096+256+4096), base.HWM, "%v without wait reuse", pol)
		require.Equal(t, int64(4096+256), wr.HWM, "%v: b did not take a's bytes", pol)
		// The program never holds more than one 4096-byte buffer and long_out:
		// wait-fenced reuse meets that bound, plain fenced reuse does not.
		require.Equal(t, int64(4096+256), wr.HeldPeak)
		require.Equal(t, wr.HeldPeak, base.HeldPeak)
		require.Equal(t, wr.Plan.Offsets["a"], wr.Plan.Offsets["b"])
		require.Equal(t, base.Makespan, wr.Makespan, "%v: the added wait delayed an op", pol)
		useB, _ := p.OpIndex("use_b")
		offload, _ := p.OpIndex("offload")
		require.Equal(t, []int{offload}, wr.AddedWaits[useB])

		// The plan is safe for the trace with the waits, and not for the
		// trace without them.
		withWaits, err := wr.WithWaits(p).Resolve()
		require.NoError(t, err)
		rep, err := check.Plan(withWaits, wr.Plan)
		require.NoError(t, err)
		require.True(t, rep.Safe, "%v: %d violations", pol, len(rep.Violations))
		rep, err = check.Plan(p, wr.Plan)
		require.NoError(t, err)
		require.False(t, rep.Safe, "%v: the plan passed without the waits", pol)
		require.Same(t, p.Trace, base.WithWaits(p), "no added waits: the trace itself")
	}
}

// TestWaitReuseNeverDelays: when b's op could start before the read ends,
// the replay does not make it wait: b takes new bytes.
func TestWaitReuseNeverDelays(t *testing.T) {
	tr, err := trace.Parse([]byte(waitReuseTrace))
	require.NoError(t, err)
	// The long op becomes short: use_b could start at time 2, before the
	// read ends at 3.
	for i := range tr.Steps {
		if tr.Steps[i].Name == "long" {
			tr.Steps[i].Cost = 1
		}
	}
	p, err := tr.Resolve()
	require.NoError(t, err)
	wr, err := replay.Run(p, replay.Options{WaitReuse: true})
	require.NoError(t, err)
	require.NotEqual(t, wr.Plan.Offsets["a"], wr.Plan.Offsets["b"])
	for _, ws := range wr.AddedWaits {
		require.Empty(t, ws)
	}
}
