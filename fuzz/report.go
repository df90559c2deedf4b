package fuzz

import (
	"fmt"
	"strings"

	"github.com/subarena/subarena"
)

// FailKind classifies a failure.
type FailKind uint8

// The kinds of failure a run can report.
const (
	// FailSetup: the Allocator or Timeline could not be built.
	FailSetup FailKind = iota + 1
	// FailWrongRead: an op read a byte whose stamp is not its expected
	// writer's — a concrete counterexample to safe reuse.
	FailWrongRead
	// FailInvariant: the Allocator's or the Timeline's CheckInvariants
	// failed.
	FailInvariant
	// FailRule: the Allocator broke the reuse rule (handed over bytes a
	// pending user not ordered before the point still uses, or accepted a
	// use not ordered after a fence) without any read going wrong in this
	// interleaving.
	FailRule
	// FailOracle: the Allocator disagreed with the model on something it
	// reports (an error it should or should not have returned, its Stats,
	// a composed layout, a buffer's placement or memory).
	FailOracle
	// FailError: a call failed that must not.
	FailError
)

var failNames = [...]string{"", "setup", "wrong read", "invariant broken", "reuse rule broken", "disagrees with the model", "unexpected error"}

// String names the kind.
func (k FailKind) String() string {
	if int(k) < len(failNames) && k != 0 {
		return failNames[k]
	}
	return fmt.Sprintf("fail(%d)", uint8(k))
}

// WrongRead locates a wrong-version read.
type WrongRead struct {
	Addr     int64 // arena byte
	Reader   int   // the op that read it
	View     int   // through this view
	Buf      int   // of this buffer
	Byte     int64 // at this offset in the buffer
	Expected int   // the op that should have written it last (-1: none)
	Found    int   // the op whose stamp it holds (-1: none)
}

// Failure is a failed run with everything needed to understand and replay
// it: the program, the interleaving as it happened, and the scheduler's
// decisions (ReplayScheduler replays them).
type Failure struct {
	Kind         FailKind
	Policy       subarena.Policy
	Detail       string
	Wrong        *WrongRead // for FailWrongRead
	Program      *Program
	Interleaving []string
	Choices      []int
	Options      RunOptions // the run's options, for a replay with RunWith
}

// Error returns a one-line summary.
func (f *Failure) Error() string {
	line, _, _ := strings.Cut(f.Detail, "\n")
	return fmt.Sprintf("%v: %v: %s", f.Policy, f.Kind, line)
}

// Report returns the full counterexample: the failure, the program and the
// interleaving.
func (f *Failure) Report() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "policy %v: %v\n  %s\n\n", f.Policy, f.Kind, strings.ReplaceAll(f.Detail, "\n", "\n  "))
	if f.Program != nil {
		sb.WriteString(f.Program.String())
	}
	sb.WriteString("interleaving:\n")
	for i, l := range f.Interleaving {
		fmt.Fprintf(&sb, "  %3d  %s\n", i, l)
	}
	fmt.Fprintf(&sb, "scheduler choices: %v", f.Choices)
	if f.Options.HostFirst || f.Options.EagerHost {
		fmt.Fprintf(&sb, " (host-first %v, eager host %v)", f.Options.HostFirst, f.Options.EagerHost)
	}
	sb.WriteByte('\n')
	return sb.String()
}

func (s *Sim) newFailure(kind FailKind, detail string) *Failure {
	f := &Failure{Kind: kind, Policy: s.pol, Detail: detail, Program: s.p}
	s.fillFailure(f)
	return f
}

// fillFailure snapshots the interleaving so far into f.
func (s *Sim) fillFailure(f *Failure) {
	f.Choices = append(f.Choices[:0], s.choices...)
	f.Options = s.opt
	f.Options.checkFrom = 0
	f.Interleaving = f.Interleaving[:0]
	for _, l := range s.log {
		f.Interleaving = append(f.Interleaving, s.formatEntry(l))
	}
}

func (s *Sim) formatEntry(l logEntry) string {
	var sb strings.Builder
	if l.host {
		sb.WriteString("host ")
		if l.retry {
			sb.WriteString("(retry) ")
		}
		sb.WriteString(s.p.StepString(l.step))
		if l.op >= 0 && l.op < len(s.ops) {
			fmt.Fprintf(&sb, " = %v", s.ops[l.op].ev)
		}
		if l.hasVal {
			fmt.Fprintf(&sb, " -> offset %d", l.val)
		}
	} else {
		fmt.Fprintf(&sb, "done o%d (%v)", l.op, s.ops[l.op].ev)
	}
	if l.note != "" {
		sb.WriteString("  [" + l.note + "]")
	}
	return sb.String()
}
