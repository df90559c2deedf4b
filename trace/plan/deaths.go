package plan

import (
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// deaths appends to out the bytes of root r's item by the op time that lets
// them go, as the checker has it (trace.Program.LetGo and LetGoGroup). A
// dense group's buffers keep their own discards and releases (a byte
// several of them cover goes at the latest). In a relaid group every member
// is a view of the root, and the group lets its bytes go as one buffer.
func (ip *inplacer) deaths(r int, out []deathRun, deathTime func(int) int) []deathRun {
	p := ip.p
	if !ip.relaid[r] {
		for _, m := range ip.group(r) {
			if b := &p.Buffers[m]; len(b.Discards) == 0 {
				// LetGo's one piece: all of b, let go at its release.
				off := ip.place[m].layout.Offset
				out = append(out, deathRun{deathTime(b.Release), off, off + b.Size})
				continue
			}
			out = appendPieces(out, p.LetGo(m, ip.place[m].layout.Offset), deathTime)
		}
		return out
	}
	if g := ip.group(r); !anyDiscards(p, g) {
		// LetGoGroup's one piece: all of the root, let go at the group's
		// last release, or never when one of it is held.
		final := p.Buffers[g[0]].Release
		for _, m := range g {
			if rel := p.Buffers[m].Release; rel < 0 || final < 0 {
				final = -1
			} else {
				final = max(final, rel)
			}
		}
		return append(out, deathRun{deathTime(final), 0, p.Buffers[g[0]].Size})
	}
	bytes := func(ref trace.Ref) ranges.Set { return *ip.rootFootprint(ref) }
	return appendPieces(out, p.LetGoGroup(ip.group(r), 0, bytes), deathTime)
}

// anyDiscards reports whether the host discards a view of a buffer of group.
func anyDiscards(p *trace.Program, group []int) bool {
	for _, m := range group {
		if len(p.Buffers[m].Discards) > 0 {
			return true
		}
	}
	return false
}

// appendPieces appends each run of each piece as dying at the op time of its
// step (deathTime(-1) for bytes held to the end).
func appendPieces(out []deathRun, pieces []trace.Piece, deathTime func(int) int) []deathRun {
	for i := range pieces {
		step := pieces[i].Step
		if step == trace.Never {
			step = -1
		}
		out = appendRuns(out, deathTime(step), &pieces[i].Bytes)
	}
	return out
}

// appendRuns appends each run of set as dying at death.
func appendRuns(out []deathRun, death int, set *ranges.Set) []deathRun {
	for _, run := range set.Runs() {
		out = append(out, deathRun{death, run.Lo, run.Hi})
	}
	return out
}
