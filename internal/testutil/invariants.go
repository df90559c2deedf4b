package testutil

import "testing"

// Invariants fails tb at once when x.CheckInvariants reports a broken
// invariant.
func Invariants(tb testing.TB, x interface{ CheckInvariants() error }) {
	tb.Helper()
	if err := x.CheckInvariants(); err != nil {
		tb.Fatal(err)
	}
}
