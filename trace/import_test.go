package trace

import (
	"fmt"
	"strings"
	"testing"
)

// TestManyKeysDuplicate: an object of many keys (a plan's offsets) finds a duplicate key
// as an object of few does, wherever it comes.
func TestManyKeysDuplicate(t *testing.T) {
	for _, n := range []int{3, 40} {
		for _, dup := range []int{1, n - 1} {
			var b strings.Builder
			b.WriteString(`{"format": "subarena-plan/v1", "trace": "t", "size": 256, "offsets": {`)
			for i := range n {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, `"b%d": 0`, i)
			}
			fmt.Fprintf(&b, `, "b%d": 0}}`, dup)
			if _, err := ParsePlan([]byte(b.String())); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("duplicate key \"b%d\"", dup)) {
				t.Fatalf("%d keys, b%d twice: %v", n, dup, err)
			}
			ok := strings.Replace(b.String(), fmt.Sprintf(`, "b%d": 0}}`, dup), "}}", 1)
			if p, err := ParsePlan([]byte(ok)); err != nil || len(p.Offsets) != n {
				t.Fatalf("%d keys: %v", n, err)
			}
		}
	}
}
