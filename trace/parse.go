package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace/internal/tracejson"
)

// Parse reads one subarena-trace/v1 document, normalizes it (see Trace) and validates it.
// A document that breaks a rule of the format is rejected with a *StepError naming the
// step index (-1 for the top level), the rule, and the line and column in data where the
// offending key, value or step starts; the error matches one of the sentinels through
// errors.Is. Parse also rejects a trace whose ops could not all be scheduled within
// int64 time (the replay's schedule, package trace/replay). Parse never panics.
func Parse(data []byte) (*Trace, error) {
	t, _, err := parse(data)
	return t, err
}

// ParseProgram is Parse followed by Resolve, at the cost of Parse alone: validating a
// trace resolves it, and the Program that validation built is the one returned (its
// Trace is the parsed trace).
func ParseProgram(data []byte) (*Program, error) {
	_, p, err := parse(data)
	return p, err
}

// parse is Parse returning the Program its validation resolved too.
func parse(data []byte) (*Trace, *Program, error) {
	t, offs, err := decode(data)
	if err != nil {
		return nil, nil, locate(err, data, offs)
	}
	p, err := t.Resolve()
	if err != nil {
		return nil, nil, locate(err, data, offs)
	}
	return t, p, nil
}

// locate fills in the line and column of a *StepError from the offset it carries or,
// failing that, from the offset of its step (offs[i] is step i's opening brace).
func locate(err error, data []byte, offs []int64) error {
	var se *StepError
	if !errors.As(err, &se) || se.Line > 0 {
		return err
	}
	switch {
	case se.pos > 0:
		se.Line, se.Column = tracejson.LineCol(data, se.pos-1)
	case se.Index >= 0 && se.Index < len(offs):
		se.Line, se.Column = tracejson.LineCol(data, offs[se.Index])
	}
	return err
}

// at returns err, an error in the document's text, as a *StepError for step index (-1:
// the top level) under err's rule, placed at document offset off.
func at(index int, off int64, err error) *StepError {
	return &StepError{Index: index, Rule: RuleOf(err), Err: err, pos: off + 1, text: true}
}

// checkSchedule runs the arithmetic of the replay's schedule (replay.Run): an op starts when
// the host has submitted it (the host's time advances at syncs to the synced op's end),
// its engine's previous op and the ops it waits for have ended, and it ends cost later.
// It rejects the first op whose end does not fit int64, so that a trace Parse accepts
// can be replayed, and planned on the same clock.
func checkSchedule(p *Program) error {
	end := make([]int64, len(p.Ops))
	free := make([]int64, len(p.Trace.Engines))
	var host int64
	for i, s := range p.Trace.Steps {
		switch s.Kind {
		case KindOp:
			k := p.StepIndex[i]
			op := &p.Ops[k]
			start := max(host, free[op.Engine])
			for _, w := range op.Waits {
				start = max(start, end[w])
			}
			e, ok := checked.Add(start, op.Cost)
			if !ok {
				return stepErr(i, ErrOverflow,
					"op %q starts at time %d and costs %d: it would end beyond int64 time", op.Name, start, op.Cost)
			}
			end[k], free[op.Engine] = e, e
		case KindSync:
			host = max(host, end[p.StepIndex[i]])
		}
	}
	return nil
}

var topKeys = []string{"format", "name", "granule", "engines", "steps"}

// decode is the format's one JSON decoder: it parses the JSON structure and normalizes
// defaults; it checks every per-step rule that needs no other step (keys, types, signs),
// leaving cross-step rules to Resolve. It returns each step's offset in data too.
//
// The documents tools write take a fast path (decodeFast, fastdecode.go) that reads them
// in one pass without encoding/json and gives up at the first thing it does not handle;
// decodeStrict reads every other document and reports every error. The fast path
// returns what decodeStrict would, which the tests and FuzzFastDecode hold it to.
func decode(data []byte) (*Trace, []int64, error) {
	if t, offs, ok := decodeFast(data); ok {
		return t, offs, nil
	}
	return decodeStrict(data)
}

// decodeStrict is decode for any document: the JSON structure read strictly
// (jsonobj.go), every error placed at its offset.
func decodeStrict(data []byte) (*Trace, []int64, error) {
	if !utf8.Valid(data) {
		bad := int64(len(data))
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				bad = int64(i)
				break
			}
			i += n
		}
		return nil, nil, at(-1, bad, fmt.Errorf("%w: invalid UTF-8", ErrSyntax))
	}
	obj, err := readObjectAt(data, 0)
	if err != nil {
		off, _ := errorOffset(err)
		return nil, nil, at(-1, off, err)
	}
	start := skipSpace(data, 0)
	top := func(f field, err error) error { return at(-1, f.valOff, err) }
	if err := onlyKeys(obj, topKeys); err != nil {
		off, _ := errorOffset(err)
		return nil, nil, at(-1, off, err)
	}
	f, ok := obj.field("format")
	if !ok {
		return nil, nil, at(-1, start, fmt.Errorf("%w: format", ErrMissingKey))
	}
	format, err := jsonString(f.raw)
	if err != nil {
		return nil, nil, top(f, err)
	}
	if format != Format {
		return nil, nil, top(f, fmt.Errorf("%w: %q is not %q", ErrFormat, format, Format))
	}
	t := &Trace{Granule: DefaultGranule}
	if f, ok := obj.field("name"); ok {
		if t.Name, err = jsonString(f.raw); err != nil {
			return nil, nil, top(f, err)
		}
	}
	if f, ok := obj.field("granule"); ok {
		if t.Granule, err = jsonInt(f.raw); err != nil {
			return nil, nil, top(f, err)
		}
		if err := checkGranule(t.Granule); err != nil {
			return nil, nil, top(f, err)
		}
	}
	f, ok = obj.field("engines")
	if !ok {
		return nil, nil, at(-1, start, fmt.Errorf("%w: engines", ErrMissingKey))
	}
	if t.Engines, err = jsonStrings(f.raw); err != nil {
		return nil, nil, top(f, err)
	}
	engines := f
	f, ok = obj.field("steps")
	if !ok {
		return nil, nil, at(-1, start, fmt.Errorf("%w: steps", ErrMissingKey))
	}
	steps, err := jsonListAt(f.raw, f.valOff)
	if err != nil {
		return nil, nil, top(f, err)
	}
	if len(t.Engines) == 0 {
		return nil, nil, top(engines, ErrNoEngines)
	}
	t.Steps = make([]Step, len(steps))
	offs := make([]int64, len(steps))
	for i, e := range steps {
		offs[i] = e.off
		if t.Steps[i], err = decodeStep(i, e, t.Engines[0]); err != nil {
			return nil, offs, err
		}
	}
	return t, offs, nil
}

// onlyKeys fails on the first key of obj that is not in allowed (a *posError at the key).
func onlyKeys(obj object, allowed []string) error {
next:
	for _, f := range obj {
		for _, a := range allowed {
			if f.key == a {
				continue next
			}
		}
		return &posError{f.keyOff, fmt.Errorf("%w: %q", ErrUnknownKey, f.key)}
	}
	return nil
}

// stepKeys lists, per kind, the keys a step of that kind may carry (the kind key first).
var stepKeys = map[Kind][]string{
	KindAlloc:    {"alloc", "size", "engine", "shape", "elem"},
	KindExternal: {"external", "size"},
	KindView:     {"view", "of", "offset", "shape", "strides", "elem"},
	KindOp:       {"op", "engine", "reads", "writes", "waits", "cost", "inplace"},
	KindRelease:  {"release"},
	KindSync:     {"sync"},
}

// stepDecoder carries the step being decoded and the first error met, so the per-field
// code below stays flat.
type stepDecoder struct {
	index int
	off   int64 // the step's opening brace
	obj   object
	err   error
}

// fail records the first error, placed at the value of key (at the step when the key
// is absent).
func (d *stepDecoder) fail(key string, err error) {
	if d.err == nil {
		off := d.off
		if f, ok := d.obj.field(key); ok {
			off = f.valOff
		}
		d.err = at(d.index, off, err)
	}
}

// decodeField sets *dst to the value of key as decode reads it and reports whether it
// did. An absent key leaves *dst as it is, an error when required; a value decode
// rejects is an error at the value.
func decodeField[T any](d *stepDecoder, key string, dst *T, required bool, decode func(json.RawMessage) (T, error)) bool {
	raw, ok := d.obj.get(key)
	if !ok {
		if required {
			d.fail(key, fmt.Errorf("%w: %s", ErrMissingKey, key))
		}
		return false
	}
	v, err := decode(raw)
	if err != nil {
		d.fail(key, prefixed(key, err))
		return false
	}
	*dst = v
	return true
}

func (d *stepDecoder) str(key string, dst *string, required bool) {
	decodeField(d, key, dst, required, jsonString)
}

func (d *stepDecoder) num(key string, dst *int64, required bool) bool {
	return decodeField(d, key, dst, required, jsonInt)
}

func (d *stepDecoder) ints(key string, dst *[]int64, required bool) bool {
	return decodeField(d, key, dst, required, jsonInts)
}

func (d *stepDecoder) names(key string, dst *[]string) {
	decodeField(d, key, dst, false, jsonStrings)
}

func decodeStep(index int, e element, firstEngine string) (Step, error) {
	obj, err := readObjectAt(e.raw, e.off)
	if err != nil {
		off, ok := errorOffset(err)
		if !ok {
			off = e.off
		}
		return Step{}, at(index, off, err)
	}
	var s Step
	for k := KindAlloc; k <= KindSync; k++ {
		if _, ok := obj.get(k.String()); !ok {
			continue
		}
		if s.Kind != KindInvalid {
			return Step{}, stepErr(index, ErrStepKind, "both %q and %q", s.Kind, k)
		}
		s.Kind = k
	}
	if s.Kind == KindInvalid {
		return Step{}, stepErr(index, ErrStepKind, "none of alloc, external, view, op, release, sync")
	}
	if err := onlyKeys(obj, stepKeys[s.Kind]); err != nil {
		off, _ := errorOffset(err)
		return Step{}, at(index, off, prefixed(s.Kind.String()+" step", err))
	}
	d := &stepDecoder{index: index, off: e.off, obj: obj}
	d.str(s.Kind.String(), &s.Name, true)
	switch s.Kind {
	case KindAlloc:
		s.Engine = firstEngine
		d.num("size", &s.Size, true)
		d.str("engine", &s.Engine, false)
		hasShape := d.ints("shape", &s.Shape, false)
		hasElem := d.num("elem", &s.Elem, false)
		if d.err == nil && hasShape != hasElem {
			d.fail("", fmt.Errorf("%w: shape and elem come together", ErrMissingKey))
		}
	case KindExternal:
		d.num("size", &s.Size, true)
	case KindView:
		d.str("of", &s.Of, true)
		d.num("offset", &s.Offset, false)
		d.ints("shape", &s.Shape, true)
		d.ints("strides", &s.Strides, true)
		d.num("elem", &s.Elem, true)
	case KindOp:
		s.Engine = firstEngine
		s.Cost = DefaultCost
		d.str("engine", &s.Engine, false)
		d.names("reads", &s.Reads)
		d.names("writes", &s.Writes)
		d.names("waits", &s.Waits)
		d.num("cost", &s.Cost, false)
		if raw, ok := obj.get("inplace"); ok {
			v, err := jsonBool(raw)
			if err != nil {
				d.fail("inplace", prefixed("inplace", err))
			}
			s.InPlace = v
		}
	}
	if d.err != nil {
		return Step{}, d.err
	}
	return s, checkStepLocal(index, s)
}

// checkStepLocal checks the rules a step breaks on its own: signs, lengths, empty names.
func checkStepLocal(index int, s Step) error {
	if s.Name == "" {
		return stepErr(index, ErrInvalidName, "%s step has an empty name", s.Kind)
	}
	for _, list := range [][]string{{s.Name, s.Engine, s.Of}, s.Reads, s.Writes, s.Waits} {
		for _, n := range list {
			if !utf8.ValidString(n) {
				return stepErr(index, ErrInvalidName, "%s step: name %q is not valid UTF-8", s.Kind, n)
			}
		}
	}
	switch s.Kind {
	case KindAlloc, KindExternal:
		if s.Size <= 0 {
			return stepErr(index, ErrInvalidSize, "%q has size %d", s.Name, s.Size)
		}
		if s.Kind == KindAlloc && s.Shape != nil {
			if s.Elem <= 0 {
				return stepErr(index, ErrInvalidElem, "%q has elem %d", s.Name, s.Elem)
			}
			n := s.Elem
			for _, dim := range s.Shape {
				if dim < 0 {
					return stepErr(index, ErrNegativeDim, "%q has dimension %d", s.Name, dim)
				}
				var ok bool
				if n, ok = checked.Mul(n, dim); !ok {
					return stepErr(index, ErrOverflow, "%q: shape × elem overflows", s.Name)
				}
			}
			if n != s.Size {
				return stepErr(index, ErrAllocShape, "%q: shape × elem = %d, size = %d", s.Name, n, s.Size)
			}
		}
	case KindView:
		if s.Of == "" {
			return stepErr(index, ErrInvalidName, "view %q: empty \"of\"", s.Name)
		}
		if len(s.Shape) != len(s.Strides) {
			return stepErr(index, ErrShapeStrides, "view %q: %d dims in shape, %d in strides",
				s.Name, len(s.Shape), len(s.Strides))
		}
		if s.Elem <= 0 {
			return stepErr(index, ErrInvalidElem, "view %q has elem %d", s.Name, s.Elem)
		}
		for _, dim := range s.Shape {
			if dim < 0 {
				return stepErr(index, ErrNegativeDim, "view %q has dimension %d", s.Name, dim)
			}
		}
	case KindOp:
		if s.Cost <= 0 {
			return stepErr(index, ErrInvalidCost, "op %q has cost %d", s.Name, s.Cost)
		}
		for _, list := range [][]string{s.Reads, s.Writes, s.Waits} {
			for _, n := range list {
				if n == "" {
					return stepErr(index, ErrInvalidName, "op %q names an empty name", s.Name)
				}
			}
		}
	}
	if (s.Kind == KindAlloc || s.Kind == KindOp) && s.Engine == "" {
		return stepErr(index, ErrInvalidName, "%s %q: empty engine name", s.Kind, s.Name)
	}
	return nil
}
