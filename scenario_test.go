package subarena

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios")

// TestScenarios runs every file in testdata/scenarios. A file is a sequence
// of blocks: a command line, a "----" line, and the expected output up to a
// blank line. Every command is followed by CheckInvariants. Run with
// -rewrite to regenerate the expected outputs (then read the diff).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScenarioFile(t, f) })
	}
}

type block struct {
	cmd, want string
}

func parseScenario(t *testing.T, data string) []block {
	var out []block
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		b := block{cmd: l}
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "----" {
			i += 2
			var want []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				want = append(want, lines[i])
			}
			b.want = strings.Join(want, "\n")
		}
		out = append(out, b)
	}
	return out
}

func runScenarioFile(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseScenario(t, string(data))
	s := &scenario{t: t}
	var rewritten strings.Builder
	// Keep the leading comment block when rewriting.
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		rewritten.WriteString(l + "\n")
	}
	for _, b := range blocks {
		got := s.run(b.cmd)
		if s.a != nil {
			if err := s.a.CheckInvariants(); err != nil {
				t.Fatalf("%s: after %q: invariant broken: %v", path, b.cmd, err)
			}
		}
		rewritten.WriteString(b.cmd + "\n----\n" + got + "\n\n")
		if !*rewrite && got != b.want {
			t.Errorf("%s: %s\n--- got\n%s\n--- want\n%s", path, b.cmd, got, b.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario is the interpreter's state: one Allocator, named buffers, views,
// ops, claims and reservations.
type scenario struct {
	t      *testing.T
	tl     *sasync.Timeline
	a      *Allocator
	bufs   map[string]*Buffer
	views  map[string]*View
	ops    map[string]sasync.Event
	opName map[sasync.Event]string
	claims map[string]*Claim
	resv   map[string]*Reservation
}

func (s *scenario) run(cmd string) string {
	f := strings.Fields(cmd)
	kv := map[string]string{}
	var pos []string
	for _, w := range f[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, w)
		}
	}
	out, err := s.exec(f[0], pos, kv)
	if err != nil {
		return "error: " + errName(err)
	}
	return out
}

// errName names the sentinel an error matches, so expected outputs do not
// depend on message wording.
func errName(err error) string {
	for _, e := range []struct {
		name string
		err  error
	}{
		{"ErrNoSpace", ErrNoSpace}, {"ErrReleased", ErrReleased}, {"ErrDoubleRelease", ErrDoubleRelease},
		{"ErrOutOfBounds", ErrOutOfBounds}, {"ErrInvalidLayout", ErrInvalidLayout}, {"ErrUnknownEvent", ErrUnknownEvent},
		{"ErrUnknownEngine", ErrUnknownEngine}, {"ErrPending", ErrPending}, {"ErrClaimed", ErrClaimed},
		{"ErrUnordered", ErrUnordered}, {"ErrNotDense", ErrNotDense}, {"ErrFinished", ErrFinished},
		{"ErrInvalidSize", ErrInvalidSize}, {"ErrAlreadyCompleted", sasync.ErrAlreadyCompleted},
		{"ErrNotExpressible", strided.ErrNotExpressible}, {"ErrOverflow", strided.ErrOverflow},
	} {
		if errors.Is(err, e.err) {
			if e.err == ErrNoSpace {
				return e.name + " (" + err.Error() + ")"
			}
			return e.name
		}
	}
	return "unexpected " + err.Error()
}

func ints(s string) []int64 {
	if s == "" {
		return []int64{}
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("bad integer list %q", s))
		}
		out = append(out, v)
	}
	return out
}

func atoi(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("bad integer %q", s))
	}
	return v
}

func (s *scenario) view(name string) *View {
	if v, ok := s.views[name]; ok {
		return v
	}
	if b, ok := s.bufs[name]; ok {
		return b.Whole()
	}
	s.t.Fatalf("unknown view %q", name)
	return nil
}

func (s *scenario) op(name string) sasync.Event {
	ev, ok := s.ops[name]
	if !ok {
		s.t.Fatalf("unknown op %q", name)
	}
	return ev
}

func (s *scenario) addView(name string, v *View, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s.views[name] = v
	cover, _, _ := v.coverLocked()
	return fmt.Sprintf("%s covers %s", name, runsString(cover)), nil
}

func runsString(set *ranges.Set) string {
	rs := set.Runs()
	if len(rs) > 6 {
		return fmt.Sprintf("%d runs in %v, %d bytes", len(rs), set.Bounds(), set.Len())
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

func (s *scenario) exec(cmd string, pos []string, kv map[string]string) (string, error) {
	switch cmd {
	case "new":
		s.tl = sasync.NewTimeline()
		for _, e := range strings.Split(kv["engines"], ",") {
			name, kind, _ := strings.Cut(e, ":")
			k := sasync.Compute
			switch kind {
			case "copy":
				k = sasync.Copy
			case "network":
				k = sasync.Network
			case "host":
				k = sasync.Host
			}
			if _, err := s.tl.AddEngine(name, k); err != nil {
				return "", err
			}
		}
		p, err := ParsePolicy(kv["policy"])
		if err != nil {
			return "", err
		}
		g := int64(256)
		if v, ok := kv["granule"]; ok {
			g = atoi(v)
		}
		c := int64(1 << 20)
		if v, ok := kv["capacity"]; ok {
			c = atoi(v)
		}
		a, err := New(Config{Capacity: c, Granule: g, Policy: p, Timeline: s.tl})
		if err != nil {
			return "", err
		}
		s.a = a
		s.bufs, s.views = map[string]*Buffer{}, map[string]*View{}
		s.ops, s.opName = map[string]sasync.Event{}, map[sasync.Event]string{}
		s.claims, s.resv = map[string]*Claim{}, map[string]*Reservation{}
		return fmt.Sprintf("policy %v, capacity %d, granule %d", p, c, g), nil
	case "alloc": // alloc NAME SIZE ENGINE
		id, ok := s.tl.EngineByName(pos[2])
		if !ok {
			return "", ErrUnknownEngine
		}
		pt, err := s.tl.Point(id)
		if err != nil {
			return "", err
		}
		b, err := s.a.Alloc(atoi(pos[1]), pt)
		if err != nil {
			return "", err
		}
		s.bufs[pos[0]] = b
		return fmt.Sprintf("%s at %v", pos[0], b.Range()), nil
	case "view": // view NAME OF offset= shape= strides= elem=
		l := strided.Layout{Offset: atoi(kv["offset"]), Shape: ints(kv["shape"]), Strides: ints(kv["strides"]), Elem: atoi(kv["elem"])}
		v, err := s.view(pos[1]).View(l)
		return s.addView(pos[0], v, err)
	case "slice": // slice NAME OF dim start stop step
		v, err := s.view(pos[1]).Slice(int(atoi(pos[2])), atoi(pos[3]), atoi(pos[4]), atoi(pos[5]))
		return s.addView(pos[0], v, err)
	case "reshape": // reshape NAME OF shape
		v, err := s.view(pos[1]).Reshape(ints(pos[2])...)
		return s.addView(pos[0], v, err)
	case "permute": // permute NAME OF perm
		var perm []int
		for _, p := range ints(pos[2]) {
			perm = append(perm, int(p))
		}
		v, err := s.view(pos[1]).Permute(perm...)
		return s.addView(pos[0], v, err)
	case "chain": // chain NAME OF DEPTH: alternate reshapes, ends at OF's shape
		v := s.view(pos[1])
		shape := v.Layout().Shape
		n, err := v.Layout().NumElems()
		if err != nil {
			return "", err
		}
		for i := 0; i < int(atoi(pos[2])); i++ {
			var err error
			if i%2 == 0 {
				v, err = v.Reshape(n)
			} else {
				v, err = v.Reshape(shape...)
			}
			if err != nil {
				return "", err
			}
		}
		return s.addView(pos[0], v, nil)
	case "submit": // submit OP ENGINE waits=a,b
		id, ok := s.tl.EngineByName(pos[1])
		if !ok {
			return "", ErrUnknownEngine
		}
		var waits []sasync.Event
		if w := kv["waits"]; w != "" {
			for _, o := range strings.Split(w, ",") {
				waits = append(waits, s.op(o))
			}
		}
		ev, err := s.tl.Submit(id, waits...)
		if err != nil {
			return "", err
		}
		s.ops[pos[0]], s.opName[ev] = ev, pos[0]
		return fmt.Sprintf("%s = %v", pos[0], ev), nil
	case "use": // use OP VIEW read|write
		acc := Read
		if pos[2] == "write" {
			acc = Write
		}
		return "ok", s.a.Use(s.view(pos[1]), s.op(pos[0]), acc)
	case "release":
		if err := s.a.Release(s.bufs[pos[0]]); err != nil {
			return "", err
		}
		return s.state(), nil
	case "discard":
		if err := s.a.Discard(s.view(pos[0])); err != nil {
			return "", err
		}
		return s.state(), nil
	case "complete":
		if err := s.tl.Complete(s.op(pos[0])); err != nil {
			return "", err
		}
		return s.state(), nil
	case "sync":
		return "ok", s.tl.HostSync(s.op(pos[0]))
	case "donate": // donate NEW VIEW OP
		b, err := s.a.Donate(s.view(pos[1]), s.op(pos[2]))
		if err != nil {
			return "", err
		}
		s.bufs[pos[0]] = b
		return fmt.Sprintf("%s at %v", pos[0], b.Range()), nil
	case "claim":
		c, err := s.a.Claim(s.view(pos[1]))
		if err != nil {
			return "", err
		}
		s.claims[pos[0]] = c
		return "claimed", nil
	case "commit":
		if err := s.claims[pos[0]].Commit(); err != nil {
			return "", err
		}
		return s.state(), nil
	case "abandon":
		return "ok", s.claims[pos[0]].Abandon()
	case "reserve":
		r, err := s.a.Reserve(s.view(pos[1]))
		if err != nil {
			return "", err
		}
		s.resv[pos[0]] = r
		return "reserved", nil
	case "activate": // activate NAME OP
		return "ok", s.resv[pos[0]].Activate(s.op(pos[1]), Read)
	case "cancel":
		if err := s.resv[pos[0]].Cancel(); err != nil {
			return "", err
		}
		return s.state(), nil
	case "state":
		return s.state(), nil
	}
	s.t.Fatalf("unknown command %q", cmd)
	return "", nil
}

// state prints what an engineer would look at: clean regions, held bytes,
// pending users' bytes.
func (s *scenario) state() string {
	st := s.a.Stats()
	free := s.a.ar.AppendFreeRegions(nil)
	var fs ranges.Set
	for _, b := range free {
		fs.Add(ranges.Range{Lo: b.Offset, Hi: b.End()})
	}
	s.a.mu.Lock()
	held := s.a.idx.Held().Clone()
	var pend []string
	seen := map[string]bool{}
	bounds := ranges.Range{Lo: 0, Hi: st.Capacity}
	s.a.idx.Users(bounds, func(_ liveness.UserID, ev sasync.Event, unknown bool) bool {
		n := s.opName[ev]
		if unknown {
			n = "?"
		}
		if !seen[n] {
			seen[n] = true
			pend = append(pend, n)
		}
		return true
	})
	s.a.mu.Unlock()
	sort.Strings(pend)
	return fmt.Sprintf("clean %s | held %s | pending %d bytes by [%s] | hwm %d",
		runsString(&fs), runsString(&held), st.Pending, strings.Join(pend, " "), st.HighWater)
}
