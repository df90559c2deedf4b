package trace

import (
	"errors"
	"testing"
)

// TestFrame: every name's bytes in a Frame are the bytes the same name covers in the
// trace rewritten with placed buffers as views of their hosts (ViewPlacements), relative to
// the same origin: the host's offset for silu and its row, the buffer's own otherwise.
func TestFrame(t *testing.T) {
	p := gateUp(t, `{"release": "silu"}, {"release": "gu"}`)
	plan := gateUpPlan(0)
	plan.Offsets["gu"] = 8
	plan.Size = 104
	f, err := NewFrame(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	t2, _, err := ViewPlacements(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	p2 := mustResolve(t, t2)
	for _, name := range []string{"gu", "gate", "up", "silu", "silu_row1", "act"} {
		r, _ := p.Lookup(name)
		r2, _ := p2.Lookup(name)
		got, exact := f.Footprint(r)
		want, _ := p2.Footprint(r2)
		if !exact || !got.Equal(&want) {
			t.Fatalf("%s: frame %v (exact %v), rewrite %v", name, got.String(), exact, want.String())
		}
		if origin := plan.Offsets[p2.Buffers[r2.Buffer].Name]; f.Origin(r.Buffer) != origin {
			t.Fatalf("%s: origin %d, want %d", name, f.Origin(r.Buffer), origin)
		}
	}
	silu, _ := p.Lookup("silu")
	gu, _ := p.Lookup("gu")
	act, _ := p.Lookup("act")
	if f.Host(silu.Buffer) != gu.Buffer || f.Host(gu.Buffer) != -1 || f.Host(act.Buffer) != -1 {
		t.Fatalf("hosts: silu %d, gu %d, act %d", f.Host(silu.Buffer), f.Host(gu.Buffer), f.Host(act.Buffer))
	}
	if m := f.Members(gu.Buffer); len(m) != 1 || m[0] != silu.Buffer || f.Members(silu.Buffer) != nil {
		t.Fatalf("members of gu %v, of silu %v", m, f.Members(silu.Buffer))
	}
	if b := f.Bytes(silu.Buffer); b.Len() != 32 || b.Bounds().Lo != 0 || b.Bounds().Hi != 48 {
		t.Fatalf("silu's bytes %v", b.String())
	}
	if _, err := NewFrame(p, gateUpPlan(20)); !errors.Is(err, ErrPlan) || !errors.Is(err, ErrOutOfBounds) {
		t.Fatalf("bad placement: %v", err)
	}
}
