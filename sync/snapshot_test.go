package sync

import (
	"fmt"
	"maps"
	"reflect"
	"testing"
)

// timelineState is a deep copy of everything a Timeline records, for
// "state unchanged" assertions.
type timelineState struct {
	n         int
	engines   [MaxEngines]Engine
	names     map[string]EngineID
	hist      [MaxEngines]history
	completed Clock
	host      Clock
	subs      int
}

func snapshot(t *Timeline) timelineState {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := timelineState{
		n:         t.n,
		engines:   t.engines,
		names:     maps.Clone(t.names),
		completed: t.completed,
		host:      t.host,
	}
	for e := range t.hist {
		s.hist[e] = t.hist[e].clone()
	}
	if subs := t.subs.Load(); subs != nil {
		s.subs = len(*subs)
	}
	return s
}

func requireSameState(tb testing.TB, before, after timelineState, what string) {
	tb.Helper()
	if !reflect.DeepEqual(before, after) {
		tb.Fatalf("%s changed the timeline state:\nbefore %+v\nafter  %+v", what, summarize(before), summarize(after))
	}
}

func summarize(s timelineState) string {
	var sub Clock
	for e := range s.hist {
		sub[e] = s.hist[e].n
	}
	return fmt.Sprintf("engines=%d submitted=%v completed=%v host=%v subs=%d", s.n, sub, s.completed, s.host, s.subs)
}
