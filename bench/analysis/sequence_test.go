package analysis

import (
	"os"
	"testing"

	"github.com/subarena/subarena/bench"
	sasync "github.com/subarena/subarena/sync"
)

type seqObs struct{ t *testing.T }

func (o seqObs) Before(d *Driver, i, b int, pt *sasync.Point) {}
func (o seqObs) After(d *Driver, i, b int, buf *Buf) {
	in := d.In
	o.t.Logf("step %4d %-16s off %6d size %6d first %6d last %6d death %d hwm %6d", i, in.P.Buffers[b].Name,
		buf.Off/256, buf.Span/256, in.FirstUse[b], in.LastUse[b], in.DeathStep[b], d.S.HighWater()/256)
}

// TestDebugSeq logs every placement of workload $WL ($QUICK: quick
// settings; $COMP: completions; $PRED: wait-fence) with its offset, size
// (granules), schedule life and the high-water mark.
func TestDebugSeq(t *testing.T) {
	name := os.Getenv("WL")
	if name == "" {
		t.Skip("WL not set")
	}
	w, _ := bench.LookupWorkload(name, os.Getenv("QUICK") != "")
	tr, _ := w.Build()
	p, _ := tr.Resolve()
	in, _ := NewInfo(p)
	c, _ := ParseCompletions(os.Getenv("COMP"))
	pr := PredictNone
	if os.Getenv("PRED") != "" {
		pr = PredictSchedule
	}
	_, _, err := Run(in, Options{Mode: PolicyMode(false), Completions: c, Observer: seqObs{t}, PredictWait: pr})
	if err != nil {
		t.Fatal(err)
	}
}
