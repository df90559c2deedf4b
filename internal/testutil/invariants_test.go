package testutil

import (
	"errors"
	"testing"
)

type checked struct{ err error }

func (c checked) CheckInvariants() error { return c.err }

// recorder is a testing.TB that records a Fatal instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Fatal(...any) { r.failed = true }

func TestInvariants(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"holds", nil}, {"broken", errors.New("broken")}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Invariants(r, checked{tc.err})
			if r.failed != (tc.err != nil) {
				t.Fatalf("failed = %v for error %v", r.failed, tc.err)
			}
		})
	}
}
