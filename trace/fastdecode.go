package trace

import "unicode/utf8"

// decodeFast is decode's fast path, for the documents tools write: plain JSON whose
// strings have no escapes, whose numbers are integers of at most 18 digits, with no null,
// no duplicate or unknown key, and "engines" before "steps". It reads the document in one
// pass without encoding/json, and gives up (ok false) at the first thing it does not
// handle, valid or not; decodeStrict then reads the document and reports its errors.
// When decodeFast returns ok, decodeStrict accepts the document and returns the same
// Trace and step offsets: it checks everything decodeStrict checks (UTF-8, syntax, keys,
// types, the per-step rules), and leaves every rare form to decodeStrict.
func decodeFast(data []byte) (t *Trace, offs []int64, ok bool) {
	if !utf8.Valid(data) {
		return nil, nil, false
	}
	s := &fastScanner{b: data}
	if !s.next('{') {
		return nil, nil, false
	}
	t = &Trace{Granule: DefaultGranule}
	var seen [5]bool // topKeys
	for first := true; ; first = false {
		if s.next('}') {
			break
		}
		if !first && !s.next(',') {
			return nil, nil, false
		}
		k := s.key(topKeys)
		if k < 0 || seen[k] || !s.next(':') {
			return nil, nil, false
		}
		seen[k] = true
		var ok bool
		switch topKeys[k] {
		case "format":
			f, ok := s.str()
			if !ok || f != Format {
				return nil, nil, false
			}
		case "name":
			if t.Name, ok = s.str(); !ok {
				return nil, nil, false
			}
		case "granule":
			g, ok := s.int()
			if !ok || g <= 0 || g&(g-1) != 0 {
				return nil, nil, false
			}
			t.Granule = g
		case "engines":
			if t.Engines, ok = s.strs(); !ok || len(t.Engines) == 0 {
				return nil, nil, false
			}
		case "steps":
			if len(t.Engines) == 0 { // steps before engines: their defaults are not known yet
				return nil, nil, false
			}
			if t.Steps, offs, ok = s.steps(t.Engines[0]); !ok {
				return nil, nil, false
			}
		}
	}
	if !seen[0] || !seen[3] || !seen[4] { // format, engines, steps
		return nil, nil, false
	}
	s.space()
	if s.i != len(s.b) {
		return nil, nil, false
	}
	return t, offs, true
}

// fastScanner reads JSON values from b at i, strictly and without allocating beyond
// what it returns.
type fastScanner struct {
	b []byte
	i int
}

func (s *fastScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes c, after white space, if it is there.
func (s *fastScanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// ended reports whether the value just read is followed (after white space) by what may
// follow a value: a comma, a closing bracket or brace.
func (s *fastScanner) ended() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case ',', ']', '}':
		return true
	}
	return false
}

// str reads a string without escapes.
func (s *fastScanner) str() (string, bool) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	j := s.i + 1
	for ; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			v := string(s.b[s.i+1 : j])
			s.i = j + 1
			return v, true
		}
		if c == '\\' || c < 0x20 {
			return "", false
		}
	}
	return "", false
}

// key reads a string without escapes and returns its index in names, or -1 when it is
// none of them (or not such a string).
func (s *fastScanner) key(names []string) int {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return -1
	}
	j := s.i + 1
	for j < len(s.b) && s.b[j] != '"' {
		j++
	}
	if j == len(s.b) {
		return -1
	}
	raw := s.b[s.i+1 : j]
	for k, name := range names {
		if string(raw) == name {
			s.i = j + 1
			return k
		}
	}
	return -1
}

// int reads an integer of at most 18 digits, without a fraction or an exponent.
func (s *fastScanner) int() (int64, bool) {
	s.space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = 10*v + int64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	if n == 0 || n > 18 || (n > 1 && s.b[start] == '0') || !s.ended() {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func (s *fastScanner) bool() (bool, bool) {
	s.space()
	for _, lit := range [2]string{"false", "true"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return lit == "true", s.ended()
		}
	}
	return false, false
}

// list reads an array, calling elem for each element.
func (s *fastScanner) list(elem func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// fastList reads an array of the values elem reads, appending them to out.
func fastList[T any](s *fastScanner, out []T, elem func() (T, bool)) ([]T, bool) {
	ok := s.list(func() bool {
		v, ok := elem()
		out = append(out, v)
		return ok
	})
	return out, ok
}

// ints reads an array of integers; an empty array gives a non-nil empty slice, as
// jsonInts does.
func (s *fastScanner) ints() ([]int64, bool) { return fastList(s, []int64{}, s.int) }

// strs reads an array of strings; an empty array gives nil, as jsonStrings does.
func (s *fastScanner) strs() ([]string, bool) { return fastList(s, nil, s.str) }

// value reads into dst the value its type takes: *int64 an integer, *string a string,
// *[]int64 and *[]string arrays of them, *bool a boolean.
func (s *fastScanner) value(dst any) bool {
	var ok bool
	switch d := dst.(type) {
	case *int64:
		*d, ok = s.int()
	case *string:
		*d, ok = s.str()
	case *[]int64:
		*d, ok = s.ints()
	case *[]string:
		*d, ok = s.strs()
	case *bool:
		*d, ok = s.bool()
	}
	return ok
}

// The keys a step may carry, by position in fastStepKeys; a kind key's position is its
// Kind - 1.
var fastStepKeys = [...]string{"alloc", "external", "view", "op", "release", "sync",
	"size", "engine", "shape", "elem", "of", "offset", "strides", "reads", "writes", "waits", "cost", "inplace"}

const (
	fkSize = 6 + iota
	fkEngine
	fkShape
	fkElem
	fkOf
	fkOffset
	fkStrides
	fkReads
	fkWrites
	fkWaits
	fkCost
	fkInPlace
	fkCount
)

// fastAllowed[kind] has bit k set when a step of that kind may carry key k.
var fastAllowed = func() (out [KindSync + 1]uint32) {
	for kind, keys := range stepKeys {
		for _, key := range keys {
			for k, name := range fastStepKeys {
				if name == key {
					out[kind] |= 1 << k
				}
			}
		}
	}
	return out
}()

// steps reads the steps array as decode's decodeStep does, with each step's offset.
func (s *fastScanner) steps(firstEngine string) ([]Step, []int64, bool) {
	steps := []Step{}
	var offs []int64
	ok := s.list(func() bool {
		s.space()
		off := int64(s.i)
		st, ok := s.step(firstEngine)
		if !ok || checkStepLocal(len(steps), st) != nil {
			return false
		}
		steps = append(steps, st)
		offs = append(offs, off)
		return true
	})
	if offs == nil {
		offs = []int64{}
	}
	return steps, offs, ok
}

// step reads one step object.
func (s *fastScanner) step(firstEngine string) (Step, bool) {
	var st Step
	if !s.next('{') {
		return st, false
	}
	var (
		seen uint32
		name string
	)
	// fields[k] is the field of st that key k sets (nil for the kind keys).
	fields := [fkCount]any{
		fkSize: &st.Size, fkElem: &st.Elem, fkOffset: &st.Offset, fkCost: &st.Cost,
		fkEngine: &st.Engine, fkOf: &st.Of,
		fkShape: &st.Shape, fkStrides: &st.Strides,
		fkReads: &st.Reads, fkWrites: &st.Writes, fkWaits: &st.Waits,
		fkInPlace: &st.InPlace,
	}
	for first := true; ; first = false {
		if s.next('}') {
			break
		}
		if !first && !s.next(',') {
			return st, false
		}
		k := s.key(fastStepKeys[:])
		if k < 0 || seen&(1<<k) != 0 || !s.next(':') {
			return st, false
		}
		seen |= 1 << k
		var ok bool
		if k < fkSize { // a kind key
			if st.Kind != KindInvalid {
				return st, false
			}
			st.Kind = Kind(k + 1)
			name, ok = s.str()
		} else {
			ok = s.value(fields[k])
		}
		if !ok {
			return st, false
		}
	}
	if st.Kind == KindInvalid || seen&^fastAllowed[st.Kind] != 0 {
		return st, false
	}
	st.Name = name
	has := func(k int) bool { return seen&(1<<k) != 0 }
	switch st.Kind {
	case KindAlloc:
		if !has(fkSize) || has(fkShape) != has(fkElem) {
			return st, false
		}
		if !has(fkEngine) {
			st.Engine = firstEngine
		}
	case KindExternal:
		if !has(fkSize) {
			return st, false
		}
	case KindView:
		if !has(fkOf) || !has(fkShape) || !has(fkStrides) || !has(fkElem) {
			return st, false
		}
	case KindOp:
		if !has(fkEngine) {
			st.Engine = firstEngine
		}
		if !has(fkCost) {
			st.Cost = DefaultCost
		}
	}
	return st, true
}
