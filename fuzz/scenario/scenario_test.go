package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	src := "#! hazard\n# head\n\nnew engines=c,x:copy policy=ir-order\n----\nout 1\n\n# about alloc\nalloc b 64 c\n----\nb at [0, 64)\nsecond line\n\nstate\n# tail\n"
	f, err := Parse("t.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Hazard || len(f.Blocks) != 3 || f.Blocks[1].Line != 9 || f.Blocks[1].Want != "b at [0, 64)\nsecond line" {
		t.Fatalf("parsed %+v", f)
	}
	if f.Blocks[2].HasWant || len(f.Blocks[1].Comments) != 1 || len(f.Trailer) != 1 {
		t.Fatalf("parsed %+v", f)
	}
	if e := f.Blocks[0].Cmd.Engines(); len(e) != 2 || e[0] != (Engine{"c", "compute"}) || e[1] != (Engine{"x", "copy"}) {
		t.Fatalf("engines %v", e)
	}
	c := f.Blocks[1].Cmd
	if c.Name != "alloc" || c.Int(1) != 64 || c.Args[2] != "c" || c.String() != "alloc b 64 c" {
		t.Fatalf("alloc %+v", c)
	}
	got := string(f.Format([]string{"out 1", "b at [0, 64)\nsecond line", "s"}))
	want := "#! hazard\n# head\n\nnew engines=c,x:copy policy=ir-order\n----\nout 1\n\n# about alloc\nalloc b 64 c\n----\nb at [0, 64)\nsecond line\n\nstate\n----\ns\n\n# tail\n"
	if got != want {
		t.Fatalf("Format:\n%s\nwant\n%s", got, want)
	}
	// Format without outputs keeps what the file said; parsing it again gives the same.
	g, err := Parse("t.txt", f.Format(nil))
	if err != nil || len(g.Blocks) != 3 || g.Blocks[1].Want != f.Blocks[1].Want || g.Blocks[2].HasWant {
		t.Fatalf("reparse: %v %+v", err, g)
	}
}

func TestCommandAccessors(t *testing.T) {
	f, err := Parse("a", []byte("view v b offset=8 shape=2,3 strides=12,4 elem=4\nsubmit o e waits=p,q\nsubmit o2 e\nreshape r v 6\nnew engines=e granule=64"))
	if err != nil {
		t.Fatal(err)
	}
	v := f.Blocks[0].Cmd
	if v.KeyInt("offset", -1) != 8 || v.KeyInt("nothing", -1) != -1 || len(v.KeyInts("shape")) != 2 || v.KeyInts("strides")[0] != 12 {
		t.Fatalf("view %+v", v)
	}
	if w := f.Blocks[1].Cmd.KeyList("waits"); len(w) != 2 || w[1] != "q" {
		t.Fatalf("waits %v", w)
	}
	if w := f.Blocks[2].Cmd.KeyList("waits"); w != nil {
		t.Fatalf("no waits: %v", w)
	}
	if c := f.Blocks[4].Cmd; c.KeyInt("granule", 256) != 64 || c.KeyInt("capacity", 7) != 7 {
		t.Fatalf("new %+v", c)
	}
	if c := f.Blocks[2].Cmd; c.Int(9) != 0 || c.Ints(9) != nil {
		t.Fatal("out of range accessors")
	}
}

// TestParseMalformed: every malformed input is refused with FILE:LINE and ErrInvalid,
// never a panic.
func TestParseMalformed(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
		msg  string
	}{
		{"frobnicate x", 1, "unknown command"},
		{"new policy=ir-order", 1, "missing key engines"},
		{"new engines=", 1, "no engines"},
		{"new engines=a:gpu", 1, "unknown engine kind"},
		{"new engines=a,,b", 1, "empty engine name"},
		{"new engines=a granule=x", 1, "not an integer"},
		{"new engines=a bogus=1", 1, "unknown key"},
		{"new engines=a engines=b", 1, "repeated key"},
		{"# c\n\nalloc b 64", 3, "takes 3 positional arguments"},
		{"alloc b sixty c", 1, "not an integer"},
		{"alloc b 99999999999999999999 c", 1, "not an integer"},
		{"reshape a b 1,,2", 1, "integer list"},
		{"use o v sideways", 1, "not read, write or read-write"},
		{"activate r o access=all", 1, "not read, write or read-write"},
		{"submit o e waits=a,", 1, "empty name"},
		{"view v b offset=0 shape=1 strides=1", 1, "missing key elem"},
		{"state\n----\nx\n\n----\n", 5, `"----" without a command`},
		{"----", 1, `"----" without a command`},
		{"state\n#! hazard", 2, "after the first command"},
		{"#! hazard\n#! hazard", 2, "repeated directive"},
		{"#! nonsense", 1, "unknown directive"},
		{"state extra", 1, "takes 0 positional"},
		{"alloc =x 1 c", 1, "unknown key"},
	} {
		f, err := Parse("bad.txt", []byte(tc.src))
		if err == nil {
			t.Errorf("%q: parsed %+v", tc.src, f)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v does not match ErrInvalid", tc.src, err)
		}
		prefix := fmt.Sprintf("bad.txt:%d: ", tc.line)
		if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %q, want prefix %q containing %q", tc.src, err, prefix, tc.msg)
		}
	}
}

func TestErrorf(t *testing.T) {
	f := &File{Name: "x.txt"}
	err := f.Errorf(&Block{Line: 12}, "unknown view %q", "v")
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), `x.txt:12: unknown view "v"`) {
		t.Fatal(err)
	}
}

func TestSeeds(t *testing.T) {
	fs, err := Seeds()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, SeedName(f.Name))
	}
	if got := strings.Join(names, " "); got != "view-chain two-branches qkv-slow-copy gate-up-split concat-members serial-queue" {
		t.Fatalf("seeds %s", got)
	}
	if !fs[0].Hazard || fs[5].Hazard {
		t.Fatal("hazard markers")
	}
	if SeedName("a/12-x-y.txt") != "x-y" || SeedName("plain.txt") != "plain" || SeedName("x-1.txt") != "x-1" {
		t.Fatal("SeedName")
	}
}

// FuzzParse: Parse never panics, and what it accepts formats to text it accepts again
// with the same commands.
func FuzzParse(f *testing.F) {
	f.Add([]byte("#! hazard\nnew engines=a,b:copy\n----\nx\n\nalloc b 1 a\nuse o b read\n"))
	f.Add([]byte("view v b offset=0 shape=2,2 strides=2,1 elem=1\r\n----\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("f", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !regexp.MustCompile(`^f:\d+: `).MatchString(err.Error()) {
				t.Fatalf("error %v", err)
			}
			return
		}
		again, err := Parse("f", sc.Format(nil))
		if err != nil {
			t.Fatalf("formatted text refused: %v", err)
		}
		if len(again.Blocks) != len(sc.Blocks) {
			t.Fatalf("%d blocks, then %d", len(sc.Blocks), len(again.Blocks))
		}
		for i := range sc.Blocks {
			if again.Blocks[i].Cmd.Text != sc.Blocks[i].Cmd.Text {
				t.Fatalf("block %d: %q, then %q", i, sc.Blocks[i].Cmd.Text, again.Blocks[i].Cmd.Text)
			}
		}
	})
}
