package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestMainTiny runs the command at the tiny size: every safe policy is
// bit-identical, the memory figures are printed, and the ir-order
// demonstration reports a wrong result (or a rejection).
func TestMainTiny(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-size", "tiny", "-check"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"reference:", "arena HWM", "whole-after-users", "whole-fenced", "subrange-after-users", "subrange-fenced"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "bit-identical"); n < 4 {
		t.Errorf("%d bit-identical results, want 4:\n%s", n, s)
	}
	if strings.Contains(s, "DIFFERS") {
		t.Errorf("a safe policy differs:\n%s", s)
	}
	if !strings.Contains(s, "ir-order") || !(strings.Contains(s, "WRONG") || strings.Contains(s, "rejected")) {
		t.Errorf("the ir-order demonstration shows neither a wrong result nor a rejection:\n%s", s)
	}
}

func TestMainFlags(t *testing.T) {
	var out strings.Builder
	err := run([]string{"-size", "tiny", "-dim", "48", "-heads", "3", "-steps", "2", "-policy", "whole-fenced", "-unsafe-demo=false"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "D=48 H=3") || strings.Count(out.String(), "bit-identical") != 1 {
		t.Errorf("overrides not applied:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"-size", "enormous"},
		{"-policy", "first-fit"},
		{"-heads", "5", "-size", "tiny"},
		{"stray"},
		{"-nosuchflag"},
	} {
		out.Reset()
		if err := run(args, &out); err == nil {
			t.Errorf("%v: accepted", args)
		} else if errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v: %v", args, err)
		}
	}
}
