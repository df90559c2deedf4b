// Package subarenaprom exports the memory of subarena Allocators as Prometheus metrics,
// for services written in Go. It is a module of its own
// (github.com/subarena/subarena/integrations/prometheus) so that the subarena module
// keeps its small dependency set; import it as
//
//	subarenaprom "github.com/subarena/subarena/integrations/prometheus"
//
// A Collector holds named Allocators (Add, Remove) and, at every scrape, takes each
// one's Stats snapshot (O(engines), whatever the number of buffers): the bytes in use,
// live, held and pending (also per engine), the free bytes, the largest free
// run and the number of free runs, the external fragmentation, the high-water mark and
// the peak of bytes in use, the buffers held and the pending users. Every metric has
// the label allocator and a name beginning with Namespace, subarena_.
//
// The Allocator does not publish its errors, so the caller hands them to Observe: each
// NoSpaceError is counted (subarena_no_space_errors_total) and its diagnosis kept, the
// last one per Allocator exported as subarena_last_no_space_bytes{figure=...} (requested,
// total_free, largest_free, held, pending), the time it happened, and
// subarena_last_no_space_info{wait="e0#12"} naming the event whose completion would free
// enough ("none" when no wait would).
//
//	buf, err := alloc.Alloc(size, point)
//	collector.Observe("kv-cache", err)
package subarenaprom

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	subarena "github.com/subarena/subarena"
)

// Namespace prefixes every metric name.
const Namespace = "subarena"

// Errors Add returns.
var (
	// ErrDuplicate: an Allocator of that name is already collected.
	ErrDuplicate = errors.New("subarenaprom: allocator name already in use")
	// ErrNilAllocator: Add was given no Allocator or an empty name.
	ErrNilAllocator = errors.New("subarenaprom: nil allocator or empty name")
)

// Collector is a prometheus.Collector over named Allocators. It is safe for
// concurrent use: scrapes, Add, Remove and Observe may run in any goroutines.
type Collector struct {
	mu     sync.Mutex
	allocs map[string]*entry
	now    func() time.Time
}

// entry is one collected Allocator and what Observe learned of it.
type entry struct {
	a       *subarena.Allocator
	noSpace uint64
	last    *subarena.NoSpaceError
	lastAt  time.Time
}

// statsGauges lists the gauges a Stats snapshot gives: each metric's name (after
// Namespace), its help, and the figure of Stats it reports.
var statsGauges = []struct {
	name, help string
	value      func(*subarena.Stats) float64
}{
	{"capacity_bytes", "Arena size in bytes (it grows in unbounded mode).", func(s *subarena.Stats) float64 { return float64(s.Capacity) }},
	{"in_use_bytes", "Arena bytes not clean: held by the program or waiting to return (granule-rounded).", func(s *subarena.Stats) float64 { return float64(s.InUse) }},
	{"live_bytes", "Bytes the program holds: buffers not released, minus discarded bytes.", func(s *subarena.Stats) float64 { return float64(s.Live) }},
	{"held_bytes", "Bytes released or discarded by the program, not yet returned to the arena.", func(s *subarena.Stats) float64 { return float64(s.Held) }},
	{"pending_bytes", "Bytes covered by pending users (union over users).", func(s *subarena.Stats) float64 { return float64(s.Pending) }},
	{"free_bytes", "Clean bytes in the arena.", func(s *subarena.Stats) float64 { return float64(s.Free) }},
	{"largest_free_bytes", "The largest clean run of the arena.", func(s *subarena.Stats) float64 { return float64(s.LargestFree) }},
	{"free_regions", "Clean runs of the arena.", func(s *subarena.Stats) float64 { return float64(s.FreeRegions) }},
	{"fragmentation_ratio", "External fragmentation: 1 - largest free run / free bytes (0 when nothing is free).", func(s *subarena.Stats) float64 { return float64(s.Fragmentation) }},
	{"high_water_bytes", "The highest end offset ever allocated (HWM).", func(s *subarena.Stats) float64 { return float64(s.HighWater) }},
	{"peak_in_use_bytes", "The most bytes ever in use.", func(s *subarena.Stats) float64 { return float64(s.PeakInUse) }},
	{"buffers", "Buffers the program holds.", func(s *subarena.Stats) float64 { return float64(s.Buffers) }},
	{"pending_users", "Pending users: ops whose use of arena bytes has not completed.", func(s *subarena.Stats) float64 { return float64(s.Users) }},
}

// metric is one exported gauge over a Stats snapshot.
type metric struct {
	desc  *prometheus.Desc
	value func(*subarena.Stats) float64
}

// statsMetrics are the metrics of statsGauges, in order.
var statsMetrics = func() []metric {
	out := make([]metric, len(statsGauges))
	for i, g := range statsGauges {
		out[i] = metric{prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", g.name), g.help, []string{"allocator"}, nil),
			g.value}
	}
	return out
}()

var (
	pendingEngineDesc = prometheus.NewDesc(Namespace+"_pending_engine_bytes",
		"Pending bytes by the engine of their users' events (engines with none are left out).",
		[]string{"allocator", "engine"}, nil)
	noSpaceDesc = prometheus.NewDesc(Namespace+"_no_space_errors_total",
		"NoSpaceErrors handed to Observe.", []string{"allocator"}, nil)
	lastNoSpaceDesc = prometheus.NewDesc(Namespace+"_last_no_space_bytes",
		"The last NoSpaceError's diagnosis: bytes requested, free, in the largest free run, held and pending.",
		[]string{"allocator", "figure"}, nil)
	lastNoSpaceTimeDesc = prometheus.NewDesc(Namespace+"_last_no_space_timestamp_seconds",
		"When Observe was handed the last NoSpaceError (Unix time).", []string{"allocator"}, nil)
	lastNoSpaceInfoDesc = prometheus.NewDesc(Namespace+"_last_no_space_info",
		`The event whose completion would have freed enough for the last NoSpaceError ("none": no wait would).`,
		[]string{"allocator", "wait"}, nil)
)

// NewCollector returns a Collector with no Allocators; register it with a
// prometheus.Registerer and Add the Allocators to export.
func NewCollector() *Collector {
	return &Collector{allocs: map[string]*entry{}, now: time.Now}
}

// Add exports a under name (the value of the label allocator). A name already in use
// is an error matching ErrDuplicate; a nil Allocator or an empty name, ErrNilAllocator.
func (c *Collector) Add(name string, a *subarena.Allocator) error {
	if a == nil || name == "" {
		return ErrNilAllocator
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.allocs[name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	c.allocs[name] = &entry{a: a}
	return nil
}

// Remove stops exporting the Allocator called name (its counters go with it) and
// reports whether there was one.
func (c *Collector) Remove(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.allocs[name]
	delete(c.allocs, name)
	return ok
}

// Observe hands the Collector an error returned by the Allocator called name. A
// *subarena.NoSpaceError is counted and its diagnosis kept as the last one; any other
// error, or nil, is ignored. It reports whether err was recorded (false too when no
// Allocator of that name is collected).
func (c *Collector) Observe(name string, err error) bool {
	var ns *subarena.NoSpaceError
	if !errors.As(err, &ns) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.allocs[name]
	if !ok {
		return false
	}
	diag := *ns
	e.noSpace++
	e.last, e.lastAt = &diag, c.now()
	return true
}

// Describe sends the descriptors of every metric the Collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range statsMetrics {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{pendingEngineDesc, noSpaceDesc, lastNoSpaceDesc, lastNoSpaceTimeDesc,
		lastNoSpaceInfoDesc} {
		ch <- d
	}
}

// Collect takes a Stats snapshot of every Allocator and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	names := make([]string, 0, len(c.allocs))
	entries := make(map[string]entry, len(c.allocs))
	for name, e := range c.allocs {
		names = append(names, name)
		entries[name] = *e
	}
	c.mu.Unlock()
	sort.Strings(names)
	for _, name := range names {
		e := entries[name]
		s := e.a.Stats()
		for _, m := range statsMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, m.value(&s), name)
		}
		for eng, b := range s.PendingPerEngine {
			if b != 0 { // the label names the engine as its events do (e0#12)
				ch <- prometheus.MustNewConstMetric(pendingEngineDesc, prometheus.GaugeValue, float64(b), name,
					fmt.Sprintf("e%d", eng))
			}
		}
		ch <- prometheus.MustNewConstMetric(noSpaceDesc, prometheus.CounterValue, float64(e.noSpace), name)
		if e.last == nil {
			continue
		}
		for _, f := range []struct {
			figure string
			v      int64
		}{{"requested", e.last.Requested}, {"total_free", e.last.TotalFree}, {"largest_free", e.last.LargestFree},
			{"held", e.last.Held}, {"pending", e.last.Pending}} {
			ch <- prometheus.MustNewConstMetric(lastNoSpaceDesc, prometheus.GaugeValue, float64(f.v), name, f.figure)
		}
		ch <- prometheus.MustNewConstMetric(lastNoSpaceTimeDesc, prometheus.GaugeValue,
			float64(e.lastAt.UnixNano())/1e9, name)
		wait := "none"
		if e.last.HasWait {
			wait = e.last.Wait.String()
		}
		ch <- prometheus.MustNewConstMetric(lastNoSpaceInfoDesc, prometheus.GaugeValue, 1, name, wait)
	}
}

var _ prometheus.Collector = (*Collector)(nil)
