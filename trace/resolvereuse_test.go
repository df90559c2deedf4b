package trace_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestResolveReusing: resolving trace after trace, each in place of the
// last (its footprints asked for first, so that its caches are full),
// gives what a fresh Resolve gives: the same entities, the same
// footprints, the same errors.
func TestResolveReusing(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	var prev *trace.Program
	for i := range 300 {
		tr := tracetest.RandomTrace(rng, 5+rng.IntN(150))
		if i%7 == 3 && len(tr.Steps) > 0 {
			// An invalid trace: an op reads a name nothing declares.
			for k := range tr.Steps {
				if tr.Steps[k].Kind == trace.KindOp {
					tr.Steps[k].Reads = append(slices.Clone(tr.Steps[k].Reads), "no-such-buffer")
					break
				}
			}
		}
		want, wantErr := tr.Resolve()
		got, gotErr := tr.ResolveReusing(prev)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("trace %d: Resolve error %v, ResolveReusing error %v", i, wantErr, gotErr)
		}
		if wantErr != nil {
			prev = nil
			continue
		}
		if !reflect.DeepEqual(got.Buffers, want.Buffers) || !reflect.DeepEqual(got.Views, want.Views) ||
			!reflect.DeepEqual(got.Ops, want.Ops) || !reflect.DeepEqual(got.Syncs, want.Syncs) ||
			!slices.Equal(got.StepIndex, want.StepIndex) {
			t.Fatalf("trace %d: ResolveReusing's program differs from Resolve's", i)
		}
		if err := got.CheckInvariants(); err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		for b := range want.Buffers {
			refs := []trace.Ref{{Buffer: b, View: -1}}
			for v := range want.Views {
				if want.Views[v].Buffer == b {
					refs = append(refs, trace.Ref{Buffer: b, View: v})
				}
			}
			for _, r := range refs {
				ws, we := want.Footprint(r)
				gs, ge := got.Footprint(r)
				if we != ge || !slices.Equal(ws.Runs(), gs.Runs()) {
					t.Fatalf("trace %d: footprint of %v: %v %v, want %v %v", i, r, gs.Runs(), ge, ws.Runs(), we)
				}
			}
		}
		prev = got
	}
}
