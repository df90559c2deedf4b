package enumname

import "testing"

type color uint8

var colorNames = [...]string{1: "red", 2: "green"}

func TestName(t *testing.T) {
	for _, tc := range []struct {
		v    color
		want string
	}{
		{1, "red"},
		{2, "green"},
		{0, "color(0)"}, // a hole in the table
		{3, "color(3)"}, // past its end
		{255, "color(255)"},
	} {
		if got := Name(colorNames[:], tc.v, "color"); got != tc.want {
			t.Errorf("Name(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
