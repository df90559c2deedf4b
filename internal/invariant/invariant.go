// Package invariant is how the module's data structures react to a
// broken invariant in builds with the invariants tag.
package invariant

// Hold panics with err, the first broken invariant a check found, unless
// err is nil: a test then fails at the call that broke something, not at
// the next check.
func Hold(err error) {
	if err != nil {
		panic(err)
	}
}
