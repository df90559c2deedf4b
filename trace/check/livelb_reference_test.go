package check

import (
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// The segments of LiveLB as they were computed before the sweep: every segment against
// every user. Kept as the oracle liveSegments must agree with.

// refLiveSegments is liveSegments as it was. It splits buffer b into byte segments with one live interval each. A byte x
// is live from the start of the first op using it until the end of the last op using it,
// or until the end of the schedule if the host still holds it then; an inplace op whose
// output may take over a dying read (inplaceCredits) ends that read's bytes at its start
// instead. Bytes no op uses are never live.
func refLiveSegments(p *trace.Program, b int, uses []opUse, s Schedule, credited map[opUse]bool) []LiveSegment {
	type user struct {
		ou  opUse
		set ranges.Set
	}
	var users []user
	cuts := []int64{0, p.Buffers[b].Size}
	for _, ou := range uses {
		fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
		users = append(users, user{ou, fp})
		for _, r := range fp.Runs() {
			cuts = append(cuts, r.Lo, r.Hi)
		}
	}
	if len(users) == 0 {
		return nil
	}
	pieces := refDeathPieces(p, b, 0)
	for _, pc := range pieces {
		for _, r := range pc.Bytes.Runs() {
			cuts = append(cuts, r.Lo, r.Hi)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	cuts = slices.Compact(cuts)
	var segs []LiveSegment
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		from, lastEnd, last := int64(-1), int64(-1), -1
		for j, us := range users {
			if !us.set.Contains(lo) {
				continue
			}
			k := us.ou.Op
			if from < 0 || s.Start[k] < from {
				from = s.Start[k]
			}
			if s.End[k] > lastEnd {
				lastEnd, last = s.End[k], j
			}
		}
		if last < 0 {
			continue
		}
		to := lastEnd
		held := false
		for _, pc := range pieces {
			if pc.Step == trace.Never && pc.Bytes.Contains(lo) {
				held = true
			}
		}
		switch {
		case held:
			to = max(to, s.Makespan)
		case credited[users[last].ou]:
			to = max(from, s.Start[users[last].ou.Op])
		}
		segs = append(segs, LiveSegment{Lo: lo, Hi: hi, From: from, To: to})
	}
	return segs
}

// compareLiveSegments fails t unless LetGo and LiveSegments give, for every buffer of p
// on schedule s, exactly what the old loops gave.
func compareLiveSegments(t *testing.T, what string, p *trace.Program, s Schedule) {
	t.Helper()
	credited := inplaceCredits(p)
	usesOf := p.UsesByBuffer()
	segs := LiveSegments(p, s)
	for b := range p.Buffers {
		if got, want := p.LetGo(b, 7), refDeathPieces(p, b, 7); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: buffer %d: pieces %v, reference %v\n%s", what, b, got, want, trace.Marshal(p.Trace))
		}
		if p.Buffers[b].External {
			if segs[b] != nil {
				t.Fatalf("%s: external buffer %d: segments %v", what, b, segs[b])
			}
			continue
		}
		got := segs[b]
		want := refLiveSegments(p, b, usesOf[b], s, credited)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: buffer %d: segments %v, reference %v\n%s", what, b, got, want, trace.Marshal(p.Trace))
		}
	}
}
