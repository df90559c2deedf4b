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
	o.t.Logf("step %4d %-16s off %6.2f size %6.2f MiB first %6d last %6d death %d hwm %6.2f", i, in.P.Buffers[b].Name,
		float64(buf.Off)/(1<<20), float64(buf.Span)/(1<<20), in.FirstUse[b], in.LastUse[b], in.DeathStep[b], float64(d.S.HighWater())/(1<<20))
}

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
	_, _, err := Run(in, Options{Mode: PolicyMode(false), Completions: c, Observer: seqObs{t}})
	if err != nil {
		t.Fatal(err)
	}
}
