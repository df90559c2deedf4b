//go:build !linux

package ggml_test

import "testing"

type cpuTimer struct{}

func startCPU(b *testing.B) cpuTimer { return cpuTimer{} }

func (c cpuTimer) report(b *testing.B) {}
