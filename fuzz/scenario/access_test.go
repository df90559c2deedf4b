package scenario

import (
	"testing"

	subarena "github.com/subarena/subarena"
)

// TestAccessWordIsString: a script names each access the way
// subarena.Access.String prints it, and the grammar accepts exactly those
// words.
func TestAccessWordIsString(t *testing.T) {
	for _, acc := range []subarena.Access{subarena.Read, subarena.Write, subarena.ReadWrite} {
		if got := Access(acc.String()); got != acc {
			t.Errorf("Access(%q) = %v, want %v", acc.String(), got, acc)
		}
		if !accesses[acc.String()] {
			t.Errorf("the grammar does not accept %q", acc.String())
		}
	}
	if len(accesses) != 3 {
		t.Errorf("the grammar accepts %d access words, want 3", len(accesses))
	}
}
