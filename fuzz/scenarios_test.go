package fuzz

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/subarena/subarena/fuzz/scenario"
)

func parseScenario(t *testing.T, name, src string) *scenario.File {
	t.Helper()
	f, err := scenario.Parse(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFromScenarioSteps: the host steps the seeds do not use convert as the Builder
// writes them.
func TestFromScenarioSteps(t *testing.T) {
	f := parseScenario(t, "7-steps.txt", `
new engines=a,b:copy capacity=512 granule=16 policy=ir-order
alloc x 64 a
submit p a
use p x write
sync p
alloc y 64 b
reserve r y
submit q b waits=p
use q x read
activate r q access=write
complete q
state
chain ch x 3
claim c ch
commit c
reserve r2 y
alloc w 32 a
submit u a
use u w read-write
donate z w u
release z
alloc d 32 a
discard d
release d
cancel r2
release x
release y
`)
	got, err := FromScenario(f)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder("steps", 2, 512, 16)
	x := b.Alloc(64, 0)
	p := b.Op(0, nil, W(b.Whole(x)))
	b.HostSync(p)
	y := b.Alloc(64, 1)
	yv := b.Whole(y)
	r := b.Reserve(yv)
	b.Op(1, []int{p}, R(b.Whole(x)), Reserved(W(yv), r))
	xw := b.Whole(x)
	n := int64(64)
	ch := b.Reshape(b.Reshape(b.Reshape(xw, n), 64), n)
	b.Claim(ch, true)
	r2 := b.Reserve(b.Whole(y))
	w := b.Alloc(32, 0)
	u := b.Op(0, nil, RW(b.Whole(w)))
	z := b.Donate(b.Whole(w), u)
	b.Release(z)
	d := b.Alloc(32, 0)
	b.Discard(b.Whole(d))
	b.Release(d)
	b.Cancel(r2)
	b.Release(x)
	b.Release(y)
	want, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || !reflect.DeepEqual(got.Steps, want.Steps) || !reflect.DeepEqual(got.Views, want.Views) {
		t.Fatalf("file gives\n%s\nbuilder gives\n%s", got, want)
	}
}

func TestFromScenarioErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"alloc x 64 a", "f.txt:1: alloc: no allocator yet"},
		{"# only a comment", "f.txt:0: no new command"},
		{"new engines=a\nnew engines=a", "f.txt:2: new: a second new"},
		{"new engines=a,a", "f.txt:1: new: engine \"a\" twice"},
		{"new engines=a\nalloc x 64 b", "f.txt:2: alloc: unknown engine \"b\""},
		{"new engines=a\nrelease x", "f.txt:2: release: unknown buffer \"x\""},
		{"new engines=a\nalloc x 64 a\nview v x offset=0 shape=4 strides=1 elem=1", "f.txt:3: view: a layout given outright"},
		{"new engines=a\nalloc x 64 a\nsubmit o a\nrelease x\nuse o x read", "f.txt:5: use: use of op \"o\" not right after its submit"},
		{"new engines=a\nalloc x 64 a\nsubmit o a waits=p", "f.txt:3: submit: unknown op \"p\""},
		{"new engines=a\nalloc x 64 a\nreshape v x 7", "f.txt:3: reshape: view reshape[7] of b0"},
		{"new engines=a\nalloc x 64 a\nsubmit o a\nuse o x read", "f.txt:0: not a valid program"},
		{"new engines=a\nactivate r o", "f.txt:2: activate: unknown reservation \"r\""},
		{"new engines=a\nalloc x 64 a\nreserve r x\nsubmit o a\nrelease x\nactivate r o", "f.txt:6: activate: activate for op \"o\" not right after its submit"},
		{"new engines=a\ncommit c", "f.txt:2: commit: unknown claim \"c\""},
		{"new engines=a\nalloc x 64 a\nclaim c x", "f.txt:0: claim \"c\" is never committed"},
	} {
		_, err := FromScenario(parseScenario(t, "f.txt", tc.src))
		if err == nil || !errors.Is(err, scenario.ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q... matching scenario.ErrInvalid", tc.src, err, tc.want)
		}
	}
}
