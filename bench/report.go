package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// WriteTable writes the matrix as an aligned text table, one block of rows
// per workload, with a header naming the columns.
func (m *Matrix) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tpolicy\tfit\tHWM\tLiveLB\toverhead\tfrag@peak\tpending peak\tallocs/s\tallocator allocs/s\tsafety\t")
	last := ""
	for _, c := range m.Cells {
		name := c.Workload
		if name == last {
			name = ""
		} else if last != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t")
		}
		last = c.Workload
		pending := formatBytes(c.PendingPeak)
		if c.Fit == FitFirstFit {
			pending = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, c.PolicyLabel(), c.Fit, formatBytes(c.HWM),
			formatBytes(c.LiveLB), formatPercent(c.Overhead), formatRatio(c.Fragmentation), pending,
			formatRate(c.AllocsPerSec), formatRate(c.AllocatorAllocsPerSec), c.safety())
	}
	return tw.Flush()
}

// safety is the table's last column.
func (c Cell) safety() string {
	switch {
	case c.Checked && c.Violations > 0:
		return fmt.Sprintf("UNSAFE: %d violations", c.Violations)
	case c.Checked:
		return "safe (checked)"
	case c.Safe:
		return "safe"
	}
	return "unsafe"
}

func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// MarshalJSON encodes the cell; a NaN or infinite figure becomes null.
func (c Cell) MarshalJSON() ([]byte, error) {
	type plain Cell // no MarshalJSON: no recursion
	return json.Marshal(struct {
		plain
		Overhead              *float64 `json:"overhead"`
		Fragmentation         *float64 `json:"fragmentation_at_peak"`
		AllocsPerSec          *float64 `json:"allocs_per_sec"`
		AllocatorSeconds      *float64 `json:"allocator_seconds"`
		AllocatorAllocsPerSec *float64 `json:"allocator_allocs_per_sec"`
	}{plain(c), finite(c.Overhead), finite(c.Fragmentation), finite(c.AllocsPerSec), finite(c.AllocatorSeconds),
		finite(c.AllocatorAllocsPerSec)})
}

// WriteJSON writes the matrix as one indented JSON document:
// {"quick": ..., "workloads": [...], "cells": [...]}; byte figures are
// integers, ratios plain numbers, unknown figures null.
func (m *Matrix) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// formatBytes renders n bytes with a binary unit: 512 B, 1.50 KiB,
// 12.00 MiB, 3.25 GiB.
func formatBytes(n int64) string {
	const k = 1024
	switch {
	case n < k && n > -k:
		return fmt.Sprintf("%d B", n)
	case n < k*k && n > -k*k:
		return fmt.Sprintf("%.2f KiB", float64(n)/k)
	case n < k*k*k && n > -k*k*k:
		return fmt.Sprintf("%.2f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(k*k*k))
}

func formatPercent(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*f)
}

func formatRatio(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return fmt.Sprintf("%.3f", f)
}

func formatRate(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "-"
	case f >= 1e6:
		return fmt.Sprintf("%.2fM", f/1e6)
	case f >= 1e3:
		return fmt.Sprintf("%.1fk", f/1e3)
	}
	return fmt.Sprintf("%.0f", f)
}
