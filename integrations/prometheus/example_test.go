package subarenaprom_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	subarena "github.com/subarena/subarena"
	subarenaprom "github.com/subarena/subarena/integrations/prometheus"
	sasync "github.com/subarena/subarena/sync"
)

// A service exports its Allocator and hands the Collector the errors it gets: the
// scrape shows the bytes a pending reader still holds and the last NoSpaceError's
// diagnosis, with the event to wait for.
func Example() {
	tl := sasync.NewTimeline()
	compute, _ := tl.AddEngine("compute", sasync.Compute)
	a, _ := subarena.New(subarena.Config{Capacity: 4096, Policy: subarena.SubrangeAfterUsers, Timeline: tl})
	defer a.Close()

	collector := subarenaprom.NewCollector()
	_ = collector.Add("activations", a)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector) // and serve reg with promhttp.HandlerFor

	// Every allocation on compute hands its error to the Collector, which keeps the
	// NoSpaceErrors and ignores the rest.
	alloc := func(size int64) (*subarena.Buffer, error) {
		pt, _ := tl.Point(compute)
		buf, err := a.Alloc(size, pt)
		collector.Observe("activations", err)
		return buf, err
	}
	buf, _ := alloc(4096)
	read, _ := tl.Submit(compute)
	_ = a.UseBuffer(buf, read, subarena.Read)
	_ = a.Release(buf)
	_, _ = alloc(1024) // the 4096 bytes are still read: no space

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				if l.GetName() != "allocator" {
					labels += " " + l.GetName() + "=" + l.GetValue()
				}
			}
			switch mf.GetName() {
			case "subarena_held_bytes", "subarena_pending_bytes", "subarena_free_bytes", "subarena_last_no_space_bytes",
				"subarena_last_no_space_info":
				fmt.Printf("%s%s %v\n", mf.GetName(), labels, m.GetGauge().GetValue())
			case "subarena_no_space_errors_total":
				fmt.Printf("%s %v\n", mf.GetName(), m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// subarena_free_bytes 0
	// subarena_held_bytes 4096
	// subarena_last_no_space_bytes figure=held 4096
	// subarena_last_no_space_bytes figure=largest_free 0
	// subarena_last_no_space_bytes figure=pending 4096
	// subarena_last_no_space_bytes figure=requested 1024
	// subarena_last_no_space_bytes figure=total_free 0
	// subarena_last_no_space_info wait=e0#1 1
	// subarena_no_space_errors_total 1
	// subarena_pending_bytes 4096
}
