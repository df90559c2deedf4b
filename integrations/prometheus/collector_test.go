package subarenaprom

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	subarena "github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

// starved is an Allocator of 4096 bytes whose only buffer was released while an op on
// engine e0 still reads it, and the NoSpaceError its next allocation gets.
func starved(t *testing.T) (*subarena.Allocator, *sasync.Timeline, sasync.Event, error) {
	t.Helper()
	tl := sasync.NewTimeline()
	compute, err := tl.AddEngine("compute", sasync.Compute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := subarena.New(subarena.Config{Capacity: 4096, Policy: subarena.SubrangeAfterUsers, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	pt, _ := tl.Point(compute)
	b, err := a.Alloc(4096, pt)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := tl.Submit(compute)
	if err := a.UseBuffer(b, ev, subarena.Read); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(b); err != nil {
		t.Fatal(err)
	}
	pt, _ = tl.Point(compute)
	_, err = a.Alloc(1024, pt)
	if !errors.Is(err, subarena.ErrNoSpace) {
		t.Fatalf("the second allocation: %v", err)
	}
	return a, tl, ev, err
}

const help = `# HELP subarena_fragmentation_ratio External fragmentation: 1 - largest free run / free bytes (0 when nothing is free).
# TYPE subarena_fragmentation_ratio gauge
# HELP subarena_free_bytes Clean bytes in the arena.
# TYPE subarena_free_bytes gauge
# HELP subarena_held_bytes Bytes released or discarded by the program, not yet returned to the arena.
# TYPE subarena_held_bytes gauge
# HELP subarena_high_water_bytes The highest end offset ever allocated (HWM).
# TYPE subarena_high_water_bytes gauge
# HELP subarena_in_use_bytes Arena bytes not clean: held by the program or waiting to return (granule-rounded).
# TYPE subarena_in_use_bytes gauge
# HELP subarena_last_no_space_bytes The last NoSpaceError's diagnosis: bytes requested, free, in the largest free run, held and pending.
# TYPE subarena_last_no_space_bytes gauge
# HELP subarena_last_no_space_info The event whose completion would have freed enough for the last NoSpaceError ("none": no wait would).
# TYPE subarena_last_no_space_info gauge
# HELP subarena_last_no_space_timestamp_seconds When Observe was handed the last NoSpaceError (Unix time).
# TYPE subarena_last_no_space_timestamp_seconds gauge
# HELP subarena_no_space_errors_total NoSpaceErrors handed to Observe.
# TYPE subarena_no_space_errors_total counter
# HELP subarena_pending_bytes Bytes covered by pending users (union over users).
# TYPE subarena_pending_bytes gauge
# HELP subarena_pending_engine_bytes Pending bytes by the engine of their users' events (engines with none are left out).
# TYPE subarena_pending_engine_bytes gauge
`

var compared = []string{"subarena_fragmentation_ratio", "subarena_free_bytes", "subarena_held_bytes",
	"subarena_high_water_bytes", "subarena_in_use_bytes", "subarena_last_no_space_bytes", "subarena_last_no_space_info",
	"subarena_last_no_space_timestamp_seconds", "subarena_no_space_errors_total", "subarena_pending_bytes",
	"subarena_pending_engine_bytes"}

// TestCollectorNoSpace: while the released buffer's reader is pending, its 4096 bytes
// are held and pending (on e0), none free, and the NoSpaceError Observe was handed is
// counted with its diagnosis and the event to wait for; once the reader completes the
// bytes are free again and the last diagnosis stays.
func TestCollectorNoSpace(t *testing.T) {
	a, tl, ev, err := starved(t)
	c := NewCollector()
	at := time.Unix(1700000000, 500000000)
	c.now = func() time.Time { return at }
	if err := c.Add("kv", a); err != nil {
		t.Fatal(err)
	}
	if !c.Observe("kv", fmt.Errorf("placing a tensor: %w", err)) {
		t.Fatal("Observe did not record a wrapped NoSpaceError")
	}
	last := `subarena_last_no_space_bytes{allocator="kv",figure="held"} 4096
subarena_last_no_space_bytes{allocator="kv",figure="largest_free"} 0
subarena_last_no_space_bytes{allocator="kv",figure="pending"} 4096
subarena_last_no_space_bytes{allocator="kv",figure="requested"} 1024
subarena_last_no_space_bytes{allocator="kv",figure="total_free"} 0
subarena_last_no_space_info{allocator="kv",wait="e0#1"} 1
subarena_last_no_space_timestamp_seconds{allocator="kv"} 1.7000000005e+09
subarena_no_space_errors_total{allocator="kv"} 1
`
	want := help + `subarena_fragmentation_ratio{allocator="kv"} 0
subarena_free_bytes{allocator="kv"} 0
subarena_held_bytes{allocator="kv"} 4096
subarena_high_water_bytes{allocator="kv"} 4096
subarena_in_use_bytes{allocator="kv"} 4096
subarena_pending_bytes{allocator="kv"} 4096
subarena_pending_engine_bytes{allocator="kv",engine="e0"} 4096
` + last
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), compared...); err != nil {
		t.Fatal(err)
	}
	if err := tl.Complete(ev); err != nil {
		t.Fatal(err)
	}
	want = help + `subarena_fragmentation_ratio{allocator="kv"} 0
subarena_free_bytes{allocator="kv"} 4096
subarena_held_bytes{allocator="kv"} 0
subarena_high_water_bytes{allocator="kv"} 4096
subarena_in_use_bytes{allocator="kv"} 0
subarena_pending_bytes{allocator="kv"} 0
` + last
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), compared...); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	// Every Stats figure is one series per Allocator, plus the counter and the last
	// diagnosis (5 figures, the time, the wait).
	if n := testutil.CollectAndCount(c); n != len(statsMetrics)+1+7 {
		t.Fatalf("%d series, want %d", n, len(statsMetrics)+8)
	}
}

// TestCollectorMetricNames: every family the Collector exports, each Stats gauge, the
// per-engine pending bytes and the NoSpaceError's, is named Namespace_... and every series
// carries the label allocator.
func TestCollectorMetricNames(t *testing.T) {
	a, _, _, noSpace := starved(t)
	c := NewCollector()
	if err := c.Add("kv", a); err != nil {
		t.Fatal(err)
	}
	if !c.Observe("kv", noSpace) {
		t.Fatal("Observe did not record the NoSpaceError")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != len(statsMetrics)+5 {
		t.Fatalf("%d families, want %d", len(families), len(statsMetrics)+5)
	}
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), Namespace+"_") {
			t.Errorf("%s is not named %s_...", mf.GetName(), Namespace)
		}
		for _, m := range mf.GetMetric() {
			labelled := false
			for _, l := range m.GetLabel() {
				labelled = labelled || l.GetName() == "allocator" && l.GetValue() == "kv"
			}
			if !labelled {
				t.Errorf("%s%v lacks allocator=kv", mf.GetName(), m.GetLabel())
			}
		}
	}
}

// TestCollectorNames: names are unique and non-empty; Observe ignores other errors,
// nil, and names not collected; Remove drops an Allocator's series.
func TestCollectorNames(t *testing.T) {
	a, _, _, noSpace := starved(t)
	c := NewCollector()
	if err := c.Add("a", a); err != nil {
		t.Fatal(err)
	}
	if err := c.Add("a", a); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a second a: %v", err)
	}
	if err := c.Add("", a); !errors.Is(err, ErrNilAllocator) {
		t.Fatalf("an empty name: %v", err)
	}
	if err := c.Add("b", nil); !errors.Is(err, ErrNilAllocator) {
		t.Fatalf("a nil allocator: %v", err)
	}
	for _, err := range []error{nil, subarena.ErrReleased, subarena.ErrNoSpace} {
		if c.Observe("a", err) {
			t.Fatalf("Observe recorded %v", err)
		}
	}
	if c.Observe("nobody", noSpace) {
		t.Fatal("Observe recorded an error of an Allocator not collected")
	}
	if got := testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		mc := make(chan prometheus.Metric, 64)
		c.Collect(mc)
		close(mc)
		for m := range mc {
			if m.Desc() == noSpaceDesc {
				ch <- m
			}
		}
	})); got != 0 {
		t.Fatalf("%v NoSpace errors counted", got)
	}
	if !c.Remove("a") || c.Remove("a") {
		t.Fatal("Remove")
	}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("%d series after Remove", n)
	}
}

// TestCollectorConcurrent scrapes while goroutines allocate, use, release, fail and
// complete on two Allocators (run with -race).
func TestCollectorConcurrent(t *testing.T) {
	c := NewCollector()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		tl := sasync.NewTimeline()
		eng, _ := tl.AddEngine("compute", sasync.Compute)
		a, err := subarena.New(subarena.Config{Capacity: 1 << 14, Policy: subarena.SubrangeFenced, Timeline: tl})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		name := fmt.Sprintf("arena%d", i)
		if err := c.Add(name, a); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				pt, _ := tl.Point(eng)
				_, err := a.Alloc(1<<15, pt) // too large: a NoSpaceError
				c.Observe(name, err)
				b, err := a.Alloc(4096, pt)
				if err != nil {
					c.Observe(name, err)
					continue
				}
				ev, _ := tl.Submit(eng)
				_ = a.UseBuffer(b, ev, subarena.Write)
				_ = a.Release(b)
				_ = tl.Complete(ev)
			}
		}()
	}
	for range 50 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "subarena_no_space_errors_total" {
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() < 200 {
					t.Fatalf("%v: %v NoSpace errors counted, want at least 200", m.GetLabel(), m.GetCounter().GetValue())
				}
			}
			return
		}
	}
	t.Fatal("no subarena_no_space_errors_total")
}
