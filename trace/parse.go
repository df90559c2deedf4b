package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Parse reads one subarena-trace/v1 document, normalizes it (see Trace) and validates it.
// A document that breaks a rule of the format is rejected with a *StepError naming the
// step index (-1 for the top level) and the rule; the error matches one of the sentinels
// through errors.Is. Parse never panics.
func Parse(data []byte) (*Trace, error) {
	t, err := decode(data)
	if err != nil {
		return nil, err
	}
	if _, err := t.Resolve(); err != nil {
		return nil, err
	}
	return t, nil
}

var topKeys = []string{"format", "name", "granule", "engines", "steps"}

// decode parses the JSON structure and normalizes defaults; it checks every per-step rule
// that needs no other step (keys, types, signs), leaving cross-step rules to Resolve.
func decode(data []byte) (*Trace, error) {
	top := func(rule string, err error) error { return &StepError{Index: -1, Rule: rule, Err: err} }
	if !utf8.Valid(data) {
		return nil, top(RuleSyntax, fmt.Errorf("%w: invalid UTF-8", ErrSyntax))
	}
	obj, err := readObject(data)
	if err != nil {
		return nil, top(RuleSyntax, err)
	}
	if err := onlyKeys(obj, topKeys); err != nil {
		return nil, top(RuleUnknownKey, err)
	}
	raw, ok := obj.get("format")
	if !ok {
		return nil, top(RuleMissingKey, fmt.Errorf("%w: format", ErrMissingKey))
	}
	format, err := jsonString(raw)
	if err != nil {
		return nil, top(RuleSyntax, err)
	}
	if format != Format {
		return nil, top(RuleFormat, fmt.Errorf("%w: %q is not %q", ErrFormat, format, Format))
	}
	t := &Trace{Granule: DefaultGranule}
	if raw, ok := obj.get("name"); ok {
		if t.Name, err = jsonString(raw); err != nil {
			return nil, top(RuleSyntax, err)
		}
	}
	if raw, ok := obj.get("granule"); ok {
		if t.Granule, err = jsonInt(raw); err != nil {
			return nil, top(RuleSyntax, err)
		}
	}
	if t.Granule <= 0 || t.Granule&(t.Granule-1) != 0 {
		return nil, top(RuleGranule, fmt.Errorf("%w: %d", ErrInvalidGranule, t.Granule))
	}
	raw, ok = obj.get("engines")
	if !ok {
		return nil, top(RuleMissingKey, fmt.Errorf("%w: engines", ErrMissingKey))
	}
	if t.Engines, err = jsonStrings(raw); err != nil {
		return nil, top(RuleSyntax, err)
	}
	raw, ok = obj.get("steps")
	if !ok {
		return nil, top(RuleMissingKey, fmt.Errorf("%w: steps", ErrMissingKey))
	}
	steps, err := jsonList(raw)
	if err != nil {
		return nil, top(RuleSyntax, err)
	}
	if len(t.Engines) == 0 {
		return nil, top(RuleEngines, ErrNoEngines)
	}
	t.Steps = make([]Step, len(steps))
	for i, raw := range steps {
		if t.Steps[i], err = decodeStep(i, raw, t.Engines[0]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// onlyKeys fails on the first key of obj that is not in allowed.
func onlyKeys(obj object, allowed []string) error {
next:
	for _, f := range obj {
		for _, a := range allowed {
			if f.key == a {
				continue next
			}
		}
		return fmt.Errorf("%w: %q", ErrUnknownKey, f.key)
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
	obj   object
	err   error
}

func (d *stepDecoder) fail(rule string, err error) {
	if d.err == nil {
		d.err = &StepError{Index: d.index, Rule: rule, Err: err}
	}
}

func (d *stepDecoder) str(key string, dst *string, required bool) {
	raw, ok := d.obj.get(key)
	if !ok {
		if required {
			d.fail(RuleMissingKey, fmt.Errorf("%w: %s", ErrMissingKey, key))
		}
		return
	}
	v, err := jsonString(raw)
	if err != nil {
		d.fail(RuleSyntax, fmt.Errorf("%s: %w", key, err))
		return
	}
	*dst = v
}

func (d *stepDecoder) num(key string, dst *int64, required bool) bool {
	raw, ok := d.obj.get(key)
	if !ok {
		if required {
			d.fail(RuleMissingKey, fmt.Errorf("%w: %s", ErrMissingKey, key))
		}
		return false
	}
	v, err := jsonInt(raw)
	if err != nil {
		rule := RuleSyntax
		if isOverflow(err) {
			rule = RuleOverflow
		}
		d.fail(rule, fmt.Errorf("%s: %w", key, err))
		return false
	}
	*dst = v
	return true
}

func (d *stepDecoder) ints(key string, dst *[]int64, required bool) bool {
	raw, ok := d.obj.get(key)
	if !ok {
		if required {
			d.fail(RuleMissingKey, fmt.Errorf("%w: %s", ErrMissingKey, key))
		}
		return false
	}
	v, err := jsonInts(raw)
	if err != nil {
		rule := RuleSyntax
		if isOverflow(err) {
			rule = RuleOverflow
		}
		d.fail(rule, fmt.Errorf("%s: %w", key, err))
		return false
	}
	*dst = v
	return true
}

func (d *stepDecoder) names(key string, dst *[]string) {
	raw, ok := d.obj.get(key)
	if !ok {
		return
	}
	v, err := jsonStrings(raw)
	if err != nil {
		d.fail(RuleSyntax, fmt.Errorf("%s: %w", key, err))
		return
	}
	*dst = v
}

func decodeStep(index int, raw json.RawMessage, firstEngine string) (Step, error) {
	obj, err := readObject(raw)
	if err != nil {
		return Step{}, &StepError{Index: index, Rule: RuleSyntax, Err: err}
	}
	var s Step
	for k := KindAlloc; k <= KindSync; k++ {
		if _, ok := obj.get(k.String()); !ok {
			continue
		}
		if s.Kind != KindInvalid {
			return Step{}, stepErr(index, RuleKind, ErrStepKind, "both %q and %q", s.Kind, k)
		}
		s.Kind = k
	}
	if s.Kind == KindInvalid {
		return Step{}, stepErr(index, RuleKind, ErrStepKind, "none of alloc, external, view, op, release, sync")
	}
	if err := onlyKeys(obj, stepKeys[s.Kind]); err != nil {
		return Step{}, &StepError{Index: index, Rule: RuleUnknownKey, Err: fmt.Errorf("%s step: %w", s.Kind, err)}
	}
	d := &stepDecoder{index: index, obj: obj}
	d.str(s.Kind.String(), &s.Name, true)
	switch s.Kind {
	case KindAlloc:
		s.Engine = firstEngine
		d.num("size", &s.Size, true)
		d.str("engine", &s.Engine, false)
		hasShape := d.ints("shape", &s.Shape, false)
		hasElem := d.num("elem", &s.Elem, false)
		if d.err == nil && hasShape != hasElem {
			d.fail(RuleMissingKey, fmt.Errorf("%w: shape and elem come together", ErrMissingKey))
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
				d.fail(RuleSyntax, fmt.Errorf("inplace: %w", err))
			}
			s.Inplace = v
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
		return stepErr(index, RuleEmptyName, ErrInvalidName, "%s step has an empty name", s.Kind)
	}
	for _, list := range [][]string{{s.Name, s.Engine, s.Of}, s.Reads, s.Writes, s.Waits} {
		for _, n := range list {
			if !utf8.ValidString(n) {
				return stepErr(index, RuleEmptyName, ErrInvalidName, "%s step: name %q is not valid UTF-8", s.Kind, n)
			}
		}
	}
	switch s.Kind {
	case KindAlloc, KindExternal:
		if s.Size <= 0 {
			return stepErr(index, RuleSize, ErrInvalidSize, "%q has size %d", s.Name, s.Size)
		}
		if s.Kind == KindAlloc && s.Shape != nil {
			if s.Elem <= 0 {
				return stepErr(index, RuleElem, ErrInvalidElem, "%q has elem %d", s.Name, s.Elem)
			}
			n := s.Elem
			for _, dim := range s.Shape {
				if dim < 0 {
					return stepErr(index, RuleNegativeDim, ErrShape, "%q has dimension %d", s.Name, dim)
				}
				var ok bool
				if n, ok = mulCheck(n, dim); !ok {
					return stepErr(index, RuleOverflow, ErrOverflow, "%q: shape × elem overflows", s.Name)
				}
			}
			if n != s.Size {
				return stepErr(index, RuleAllocShape, ErrShape, "%q: shape × elem = %d, size = %d", s.Name, n, s.Size)
			}
		}
	case KindView:
		if s.Of == "" {
			return stepErr(index, RuleEmptyName, ErrInvalidName, "view %q: empty \"of\"", s.Name)
		}
		if len(s.Shape) != len(s.Strides) {
			return stepErr(index, RuleShapeStrides, ErrShape, "view %q: %d dims in shape, %d in strides",
				s.Name, len(s.Shape), len(s.Strides))
		}
		if s.Elem <= 0 {
			return stepErr(index, RuleElem, ErrInvalidElem, "view %q has elem %d", s.Name, s.Elem)
		}
		for _, dim := range s.Shape {
			if dim < 0 {
				return stepErr(index, RuleNegativeDim, ErrShape, "view %q has dimension %d", s.Name, dim)
			}
		}
	case KindOp:
		if s.Cost <= 0 {
			return stepErr(index, RuleCost, ErrInvalidCost, "op %q has cost %d", s.Name, s.Cost)
		}
		for _, list := range [][]string{s.Reads, s.Writes, s.Waits} {
			for _, n := range list {
				if n == "" {
					return stepErr(index, RuleEmptyName, ErrInvalidName, "op %q names an empty name", s.Name)
				}
			}
		}
	}
	if (s.Kind == KindAlloc || s.Kind == KindOp) && s.Engine == "" {
		return stepErr(index, RuleEmptyName, ErrInvalidName, "%s %q: empty engine name", s.Kind, s.Name)
	}
	return nil
}

func isOverflow(err error) bool { return errors.Is(err, ErrOverflow) }

// mulCheck returns a*b for a, b >= 0 and whether it fits int64.
func mulCheck(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > (1<<63-1)/b {
		return 0, false
	}
	return a * b, true
}

// addCheck returns a+b and whether it fits int64.
func addCheck(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}
