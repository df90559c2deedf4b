package trace

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadLimited: a document up to the limit is read whole; one byte more is refused
// with ErrLimit, naming the limit, after reading no more than one byte past it.
func TestReadLimited(t *testing.T) {
	for _, c := range []struct {
		head, rest string
		ok         bool
	}{
		{"", "", true},
		{"abc", "defgh", true},
		{"", "abcdefgh", true},
		{"abcdefgh", "", true},
		{"abcd", "efghi", false},
		{"", strings.Repeat("x", 1000), false},
	} {
		src := &countingReader{r: strings.NewReader(c.rest)}
		data, err := readLimited([]byte(c.head), src, 8)
		if c.ok {
			if err != nil || string(data) != c.head+c.rest {
				t.Errorf("%q+%q: %q, %v", c.head, c.rest, data, err)
			}
			continue
		}
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "larger than the 8 B (8 B)") {
			t.Errorf("%q+%q: error %v, want ErrLimit naming the limit", c.head, c.rest, err)
		}
		if int64(len(c.head))+src.n > 9 {
			t.Errorf("%q+%q: read %d bytes past the head, limit 8", c.head, c.rest, src.n)
		}
	}
	if got := sizeText(MaxDocumentSize); got != "1 GiB" {
		t.Errorf("sizeText(MaxDocumentSize) = %q", got)
	}
}

// TestGranuleLimit: Parse and Resolve refuse a granule above MaxGranule with ErrLimit
// (a power of two, so not ErrInvalidGranule), and one that is no power of two with
// ErrInvalidGranule.
func TestGranuleLimit(t *testing.T) {
	doc := func(g string) []byte {
		return []byte(`{"format": "subarena-trace/v1", "granule": ` + g + `, "engines": ["c"], "steps": [
			{"alloc": "a", "size": 8}, {"op": "w", "writes": ["a"]}, {"release": "a"}]}`)
	}
	for g, want := range map[string]error{"4611686018427387904": ErrLimit, "2147483648": ErrLimit, "3": ErrInvalidGranule} {
		if _, err := Parse(doc(g)); !errors.Is(err, want) || (want == ErrLimit && errors.Is(err, ErrInvalidGranule)) {
			t.Errorf("granule %s: Parse: %v, want %v", g, err, want)
		}
	}
	if _, err := Parse(doc("1073741824")); err != nil {
		t.Errorf("granule 2^30: %v", err)
	}
	tr := &Trace{Granule: 1 << 31, Engines: []string{"c"}}
	if _, err := tr.Resolve(); !errors.Is(err, ErrLimit) || RuleOf(err) != "limit" {
		t.Errorf("Resolve granule 2^31: %v", err)
	}
}

// TestArenaLimit: Resolve refuses an alloc above the arena limit of its granule, and
// allocs live together above it, with ErrLimit at the step that passes it; external
// buffers take no arena bytes and are not limited.
func TestArenaLimit(t *testing.T) {
	alloc := func(name string, size int64) Step { return Step{Kind: KindAlloc, Name: name, Size: size, Engine: "c"} }
	op := Step{Kind: KindOp, Name: "w", Engine: "c", Writes: []string{"a"}, Cost: 1}
	for _, c := range []struct {
		name    string
		granule int64
		steps   []Step
		step    int // -1: accepted
		says    string
	}{
		{"4 TiB alloc", 256, []Step{alloc("a", 4<<40), op}, 0, `alloc "a" of 4398046511104 B is above the arena limit of 1099511627776 B (1 TiB)`},
		{"5e9 at granule 1", 1, []Step{alloc("a", 5e9), op}, 0, "above the arena limit of 4294967296 B (2^32 granules of 1 B)"},
		{"live together", 256, []Step{alloc("a", 600<<30), alloc("b", 600<<30), op}, 1, "1288490188800 B allocated and not released"},
		{"released between", 256, []Step{alloc("a", 600<<30), op, {Kind: KindRelease, Name: "a"}, alloc("b", 600<<30)}, -1, ""},
		{"external", 256, []Step{{Kind: KindExternal, Name: "a", Size: 4 << 40}, op}, -1, ""},
	} {
		tr := &Trace{Name: c.name, Granule: c.granule, Engines: []string{"c"}, Steps: c.steps}
		_, err := tr.Resolve()
		if c.step < 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var se *StepError
		if !errors.Is(err, ErrLimit) || !errors.As(err, &se) || se.Index != c.step || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrLimit at step %d saying %q", c.name, err, c.step, c.says)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
