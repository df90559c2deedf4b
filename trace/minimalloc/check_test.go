package minimalloc_test

// Tests of the MiniMalloc importer that check its plans: external, since the checker
// (package trace/check) imports this package.

import (
	"bytes"
	"testing"

	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/minimalloc"
)

func TestMiniMallocLegacyAndColumns(t *testing.T) {
	// Legacy headers: end is inclusive. Alignment raises the granule; gaps are read
	// (and ignored); extra columns are accepted; the offset column is a plan.
	csv := "buffer,start,end,size,alignment,gaps,hint,offset\r\n" +
		"x,0,3,1024,512,1-1@0:512,7,0\r\n" +
		"y,4,5,2048,1,,,1024\r\n" +
		"\r\nignored,after,a,blank line\r\n"
	mm, err := minimalloc.Parse([]byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	if len(mm.Buffers) != 2 || mm.Buffers[0].Upper != 4 || mm.Buffers[0].Alignment != 512 ||
		len(mm.Buffers[0].Gaps) != 1 || mm.Buffers[0].Gaps[0].Upper != 2 || !mm.Buffers[0].Gaps[0].Window {
		t.Fatalf("%+v", mm.Buffers)
	}
	tr, err := mm.Trace("legacy")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Granule != 512 {
		t.Fatalf("granule %d", tr.Granule)
	}
	plan, ok := mm.Plan("legacy")
	if !ok || plan.Offsets["y"] != 1024 || plan.Size != 3072 {
		t.Fatalf("plan %+v", plan)
	}
	// x [0,4) and y [4,6) do not conflict, so the plan is safe even if they overlapped.
	p, err := tr.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Offsets["y"] = 0
	if rep, err := check.Plan(p, plan); err != nil || !rep.Safe {
		t.Fatalf("%v %+v", err, rep)
	}
	// Export and read back: same conflicts, offsets kept.
	var b bytes.Buffer
	if err := minimalloc.Write(&b, p, plan); err != nil {
		t.Fatal(err)
	}
	back, err := minimalloc.Parse(b.Bytes())
	if err != nil || !back.HasOffsets || len(back.Buffers) != 2 || back.Buffers[1].Offset != 0 ||
		back.Buffers[0].Upper > back.Buffers[1].Lower {
		t.Fatalf("%v %+v\n%s", err, back, b.String())
	}
}
