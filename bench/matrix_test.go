package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench/benchtest"
)

var (
	quickOnce   sync.Once
	quickMatrix *Matrix
	quickErr    error
)

// quick runs the quick matrix once for all tests of this file.
func quick(t *testing.T) *Matrix {
	t.Helper()
	quickOnce.Do(func() { quickMatrix, quickErr = RunMatrix(MatrixOptions{Quick: true}) })
	if quickErr != nil {
		t.Fatal(quickErr)
	}
	return quickMatrix
}

func TestQuickMatrixComplete(t *testing.T) {
	m := quick(t)
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if len(m.Workloads) != 5 {
		t.Fatalf("%d workloads", len(m.Workloads))
	}
	for _, w := range m.Workloads {
		for _, pol := range subarena.Policies() {
			for _, fit := range []string{"fast", "lean"} {
				c, ok := m.Find(w.Name, pol.String(), fit)
				if !ok {
					t.Fatalf("no cell %s/%v/%s", w.Name, pol, fit)
				}
				if c.HWM <= 0 || c.LiveLB <= 0 || c.Allocs != w.Buffers {
					t.Fatalf("cell %+v of %+v", c, w)
				}
				if pol == subarena.IROrder && !c.Checked {
					t.Fatalf("ir-order cell %s/%s not checked", w.Name, fit)
				}
			}
		}
		for _, pol := range []subarena.Policy{subarena.IROrder, subarena.WholeAfterUsers} {
			c, ok := m.Find(w.Name, pol.String(), FitFirstFit)
			if !ok || !c.Checked {
				t.Fatalf("no checked first-fit cell %s/%v", w.Name, pol)
			}
			// First-fit under whole-after-users lifetimes is safe by construction.
			if pol == subarena.WholeAfterUsers && c.Violations != 0 {
				t.Fatalf("first-fit/whole-after-users on %s: %d violations", w.Name, c.Violations)
			}
		}
	}
	// ir-order is caught on every multi-engine workload: the checker finds
	// the premature reuse it makes.
	for _, name := range []string{"llama-engines", "batching", "cnn-concat", "random"} {
		c, _ := m.Find(name, subarena.IROrder.String(), "lean")
		if c.Violations == 0 || c.Safe {
			t.Fatalf("ir-order on %s: %+v", name, c)
		}
	}
}

// The claim the workloads exist to test: on workloads 2–4 (parts of one
// buffer dying at different times on different engines) subrange-fenced
// needs a smaller arena than both whole-buffer policies, and on no workload
// a larger one than either. It is asserted on the quick matrix and on the
// full one (what `subarena bench` prints), under both fit strategies.
func TestSubrangeFencedPeak(t *testing.T) {
	t.Run("quick", func(t *testing.T) { checkSubrangePeak(t, quick(t)) })
	t.Run("full", func(t *testing.T) {
		if testing.Short() {
			t.Skip("the full matrix takes seconds (minutes under -race)")
		}
		m, err := RunMatrix(MatrixOptions{NoFirstFit: true,
			Policies: []subarena.Policy{subarena.WholeAfterUsers, subarena.WholeFenced, subarena.SubrangeFenced}})
		if err != nil {
			t.Fatal(err)
		}
		checkSubrangePeak(t, m)
	})
}

func checkSubrangePeak(t *testing.T, m *Matrix) {
	t.Helper()
	strict := map[string]bool{"llama-engines": true, "batching": true, "cnn-concat": true}
	for _, w := range m.Workloads {
		for _, fit := range []string{"lean", "fast"} {
			sf, ok := m.Find(w.Name, subarena.SubrangeFenced.String(), fit)
			if !ok {
				t.Fatalf("%s/%s: no subrange-fenced cell", w.Name, fit)
			}
			for _, other := range []subarena.Policy{subarena.WholeFenced, subarena.WholeAfterUsers} {
				o, ok := m.Find(w.Name, other.String(), fit)
				if !ok {
					t.Fatalf("%s/%s: no %v cell", w.Name, fit, other)
				}
				if sf.HWM > o.HWM {
					t.Errorf("%s/%s: subrange-fenced needs %d B, more than %v's %d B", w.Name, fit, sf.HWM, other, o.HWM)
				} else if strict[w.Name] && sf.HWM == o.HWM {
					t.Errorf("%s/%s: subrange-fenced needs %d B, no less than %v", w.Name, fit, sf.HWM, other)
				}
			}
		}
	}
}

func TestMatrixOutputs(t *testing.T) {
	m := quick(t)
	var js bytes.Buffer
	if err := m.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Quick     bool
		Workloads []WorkloadInfo
		Cells     []map[string]any
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if !back.Quick || len(back.Cells) != len(m.Cells) || len(back.Workloads) != len(m.Workloads) {
		t.Fatalf("JSON has %d cells, %d workloads", len(back.Cells), len(back.Workloads))
	}
	for i, c := range back.Cells {
		for _, k := range []string{"workload", "policy", "fit", "hwm", "live_lb", "overhead", "fragmentation_at_peak",
			"pending_peak", "allocs_per_sec", "run_seconds", "allocator_seconds", "allocator_allocs_per_sec",
			"violations", "safe"} {
			if _, ok := c[k]; !ok {
				t.Fatalf("cell %d lacks %q", i, k)
			}
		}
		// A replay's allocator time is part of its run; the first-fit rows have none.
		mc := m.Cells[i]
		if mc.Fit == FitFirstFit {
			if c["allocator_allocs_per_sec"] != nil || c["allocator_seconds"] != nil {
				t.Fatalf("first-fit cell %d has allocator figures %v, %v", i, c["allocator_allocs_per_sec"], c["allocator_seconds"])
			}
		} else if !(mc.AllocatorSeconds > 0 && mc.AllocatorSeconds <= mc.RunSeconds && mc.AllocatorAllocsPerSec >= mc.AllocsPerSec) {
			t.Fatalf("cell %d: %v s in the allocator of a %v s run, %v allocs/s against %v", i, mc.AllocatorSeconds,
				mc.RunSeconds, mc.AllocatorAllocsPerSec, mc.AllocsPerSec)
		}
		if int64(c["hwm"].(float64)) != m.Cells[i].HWM {
			t.Fatalf("cell %d hwm %v, want %d", i, c["hwm"], m.Cells[i].HWM)
		}
	}
	var table bytes.Buffer
	if err := m.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(table.String(), "\n"), "\n")
	if h := strings.Fields(lines[0]); !slices.Equal(h, []string{"workload", "policy", "fit", "HWM", "LiveLB", "overhead",
		"frag@peak", "pending", "peak", "allocs/s", "allocator", "allocs/s", "safety"}) {
		t.Fatalf("table header %q", lines[0])
	}
	rows := 0
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) != "" {
			rows++
		}
	}
	if rows != len(m.Cells) {
		t.Fatalf("table has %d rows for %d cells:\n%s", rows, len(m.Cells), table.String())
	}
	for _, w := range m.Workloads {
		if !strings.Contains(table.String(), w.Name) {
			t.Fatalf("table lacks %s", w.Name)
		}
	}
	if !strings.Contains(table.String(), "UNSAFE") {
		t.Fatal("table marks no ir-order row unsafe")
	}
	var svg bytes.Buffer
	if err := m.WritePeakSVG(&svg, "lean"); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg.Bytes())
}

// checkSVG requires data to be a well-formed SVG picture with drawing in it.
func checkSVG(t *testing.T, data []byte) {
	t.Helper()
	if elems := benchtest.SVG(t, data); elems < 10 {
		t.Fatalf("SVG with %d elements", elems)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.50 KiB", 3 << 20: "3.00 MiB",
		5 << 30: "5.00 GiB", -2048: "-2.00 KiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
