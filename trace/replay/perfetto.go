package replay

import (
	"encoding/json"
	"io"
)

// PerfettoUnit is how many trace microseconds one simulated cost unit spans in
// WritePerfetto's output.
const PerfettoUnit = 1000

type chromeEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Ts   int64          `json:"ts"`
	Dur  int64          `json:"dur,omitempty"`
	Cat  string         `json:"cat,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// WritePerfetto writes a replay as a Chrome trace (JSON object format), which Perfetto and
// chrome://tracing open: one thread per engine with each op a slice over its simulated
// [start, end) (1 cost unit = PerfettoUnit µs), and counters for the Allocator's in-use,
// pending and high-water bytes, sampled at each host time the replay reached (the host's
// clock advances only at syncs) and once more after the final completions.
func WritePerfetto(w io.Writer, res *Result, engines []string) error {
	const pid = 1
	events := []chromeEvent{{Name: "process_name", Ph: "M", Pid: pid,
		Args: map[string]any{"name": "subarena replay " + res.Trace + " (" + res.Policy.String() + ")"}}}
	tid := map[string]int{}
	for i, e := range engines {
		tid[e] = i + 1
		events = append(events, chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: i + 1,
			Args: map[string]any{"name": e}})
	}
	for _, o := range res.OpTimes {
		events = append(events, chromeEvent{Name: o.Op, Ph: "X", Pid: pid, Tid: tid[o.Engine], Cat: "op",
			Ts: o.Start * PerfettoUnit, Dur: (o.End - o.Start) * PerfettoUnit,
			Args: map[string]any{"submitted": o.Submit * PerfettoUnit}})
	}
	counter := func(ts int64, r StepRecord) chromeEvent {
		return chromeEvent{Name: "arena bytes", Ph: "C", Pid: pid, Ts: ts * PerfettoUnit,
			Args: map[string]any{"in_use": r.InUse, "pending": r.Pending, "high_water": r.HighWater}}
	}
	for i, r := range res.Steps {
		if i+1 < len(res.Steps) && res.Steps[i+1].Time == r.Time {
			continue // only the state after the last step at each host time
		}
		events = append(events, counter(r.Time, r))
	}
	events = append(events, counter(res.Makespan, res.Final))
	enc := json.NewEncoder(w)
	return enc.Encode(struct {
		TraceEvents     []chromeEvent `json:"traceEvents"`
		DisplayTimeUnit string        `json:"displayTimeUnit"`
	}{events, "ms"})
}
