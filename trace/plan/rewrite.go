package plan

import (
	"fmt"

	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
)

// rewrite returns a copy of t in which every relaid buffer is a view of its
// root with its in-place layout, every view of a relaid buffer is
// re-expressed in that layout, and each root with relaid members is
// released once, at the last release of its group (never, if any member is
// held to the end). It returns t itself when no buffer is relaid, and the
// names of the relaid buffers. Unchanged steps share their slices with t.
// The result is not validated here: Plan resolves it for the safety check.
func rewrite(t *trace.Trace, ip *inplacer) (*trace.Trace, []string, error) {
	p := ip.p
	var relaid []string
	for b := range p.Buffers {
		if ip.place[b].relaid {
			relaid = append(relaid, p.Buffers[b].Name)
		}
	}
	if len(relaid) == 0 {
		return t, nil, nil
	}
	// The final release of each root with relaid members.
	final := map[int]int{} // root -> step index of its one release, -1 if held
	for r := range p.Buffers {
		if !ip.relaid[r] {
			continue
		}
		last := -1
		held := false
		for _, m := range ip.members[r] {
			if rel := p.Buffers[m].Release; rel < 0 {
				held = true
			} else {
				last = max(last, rel)
			}
		}
		if held {
			last = -1
		}
		final[r] = last
	}
	// viewLayout is a view's new layout relative to its (new) buffer.
	viewLayout := func(v int) (strided.Layout, bool) {
		view := &p.Views[v]
		pl := ip.place[view.Buffer]
		if !pl.relaid {
			return view.Layout, true
		}
		return relayout(view.Layout, p.Buffers[view.Buffer].Layout, pl.layout)
	}
	out := &trace.Trace{Name: t.Name, Granule: t.Granule, Engines: append([]string(nil), t.Engines...),
		Steps: make([]trace.Step, 0, len(t.Steps))}
	for i, s := range t.Steps {
		switch s.Kind {
		case trace.KindAlloc:
			b := p.StepIndex[i]
			pl := ip.place[b]
			if !pl.relaid {
				break
			}
			l := pl.layout
			out.Steps = append(out.Steps, trace.Step{Kind: trace.KindView, Name: s.Name,
				Of: p.Buffers[pl.root].Name, Offset: l.Offset, Shape: append([]int64(nil), l.Shape...),
				Strides: append([]int64(nil), l.Strides...), Elem: l.Elem})
			continue
		case trace.KindView:
			v := p.StepIndex[i]
			view := &p.Views[v]
			if !ip.place[view.Buffer].relaid {
				break
			}
			l, ok := viewLayout(v)
			if !ok {
				return nil, nil, fmt.Errorf("view %q of relaid %q: %w", s.Name, p.Buffers[view.Buffer].Name, ErrInvalidTrace)
			}
			parent := ip.place[view.Buffer].layout
			if view.Parent >= 0 {
				if parent, ok = viewLayout(view.Parent); !ok {
					return nil, nil, fmt.Errorf("view %q: parent: %w", s.Name, ErrInvalidTrace)
				}
			}
			out.Steps = append(out.Steps, trace.Step{Kind: trace.KindView, Name: s.Name, Of: s.Of,
				Offset: l.Offset - parent.Offset, Shape: l.Shape, Strides: l.Strides, Elem: l.Elem})
			continue
		case trace.KindRelease:
			ref, ok := p.Lookup(s.Name)
			if !ok || ref.View >= 0 {
				break // a discard of a view stays where it is
			}
			r := ip.place[ref.Buffer].root
			last, grouped := final[r]
			if !grouped {
				break
			}
			if i == last {
				out.Steps = append(out.Steps, trace.Step{Kind: trace.KindRelease, Name: p.Buffers[r].Name})
			}
			continue
		}
		out.Steps = append(out.Steps, s) // unchanged steps share their lists with t
	}
	return out, relaid, nil
}
