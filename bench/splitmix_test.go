package bench

import "testing"

func TestSplitMix64FirstOutputs(t *testing.T) {
	g := NewSplitMix64(42)
	for i, want := range []uint64{0xbdd732262feb6e95, 0x28efe333b266f103, 0x47526757130f9f52} {
		if got := g.Next(); got != want {
			t.Fatalf("output %d = %#x, want %#x", i, got, want)
		}
	}
}

func TestMix(t *testing.T) {
	// FNV-1a of the single byte 'a' is 0xaf63dc4c8601ec8c: the same
	// multiply-xor step over one 8-bit value.
	if got := mix(hashInit, 'a'); got != 0xaf63dc4c8601ec8c {
		t.Fatalf("mix = %#x", got)
	}
}
