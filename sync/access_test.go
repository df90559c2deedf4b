package sync

import "testing"

func TestAccessString(t *testing.T) {
	for acc, want := range map[Access]string{
		AccessRead:      "read",
		AccessWrite:     "write",
		AccessReadWrite: "read-write",
		0:               "access(0)",
		4:               "access(4)",
	} {
		if got := acc.String(); got != want {
			t.Errorf("Access(%d).String() = %q, want %q", uint8(acc), got, want)
		}
	}
}
