package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
)

// TestMatrixWaitReuse: the wait-reuse cells come beside the plain ones for
// the fenced policies only, every one checked safe against its trace with
// the added waits, and on the batching workload (whose host learns of
// completions late) wait-fenced reuse needs less than plain fenced reuse.
func TestMatrixWaitReuse(t *testing.T) {
	m, err := RunMatrix(MatrixOptions{Quick: true, WaitReuse: true, NoFirstFit: true, Fits: []arena.Fit{arena.FitLean}})
	require.NoError(t, err)
	require.NoError(t, m.CheckInvariants())
	waits := 0
	for _, c := range m.Cells {
		if !c.WaitReuse {
			continue
		}
		waits++
		require.Contains(t, []string{subarena.SubrangeFenced.String(), subarena.WholeFenced.String()}, c.Policy)
		require.True(t, c.Checked && c.Safe && c.Violations == 0, "%s %s: %+v", c.Workload, c.PolicyLabel(), c)
		require.GreaterOrEqual(t, c.HWM, c.LiveLB)
	}
	require.Equal(t, 2*len(m.Workloads), waits)
	plain, _ := m.Find("batching", subarena.SubrangeFenced.String(), "lean")
	for _, c := range m.Cells {
		if c.Workload == "batching" && c.WaitReuse && c.Policy == subarena.SubrangeFenced.String() {
			require.Less(t, c.HWM, plain.HWM, "batching: wait reuse %d B, plain %d B", c.HWM, plain.HWM)
		}
	}
}
