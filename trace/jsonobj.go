package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/subarena/subarena/trace/internal/tracejson"
)

// field is one key of a JSON object with its raw value, in document order, and where
// each sits: byte offsets into the document (readObjectAt's base added).
type field struct {
	key            string
	raw            json.RawMessage
	keyOff, valOff int64
}

// object is a JSON object read strictly: keys are compared exactly (encoding/json would
// match them case-insensitively), duplicates are rejected, and the order is kept.
type object []field

// get returns the raw value of key and whether it is present.
func (o object) get(key string) (json.RawMessage, bool) {
	f, ok := o.field(key)
	return f.raw, ok
}

// field returns the field of key and whether it is present.
func (o object) field(key string) (field, bool) {
	for _, f := range o {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// posError is an error at a byte offset of the document being read; its text leaves
// the position out (the caller, which knows the document, renders it).
type posError struct {
	off int64
	err error
}

func (e *posError) Error() string { return e.err.Error() }
func (e *posError) Unwrap() error { return e.err }

// errorOffset returns the document offset an error carries, if any.
func errorOffset(err error) (int64, bool) {
	var pe *posError
	if errors.As(err, &pe) {
		return pe.off, true
	}
	return 0, false
}

// readObject decodes raw, which must be exactly one JSON object. A JSON syntax error
// names its line and column in raw (raw is the whole document wherever such an error can
// occur: nested values were checked when their document was).
func readObject(raw []byte) (object, error) {
	obj, err := readObjectAt(raw, 0)
	if off, ok := errorOffset(err); ok && errors.Is(err, ErrSyntax) {
		line, col := tracejson.LineCol(raw, off)
		return nil, fmt.Errorf("%w: line %d, column %d: %s", ErrSyntax, line, col, syntaxDetail(err))
	}
	return obj, err
}

// syntaxDetail is err's text without the ErrSyntax prefix.
func syntaxDetail(err error) string {
	return strings.TrimPrefix(err.Error(), ErrSyntax.Error()+": ")
}

// readObjectAt is readObject for raw found at byte offset base of its document: field
// offsets and the offsets of errors (a *posError) count from the document's start.
func readObjectAt(raw []byte, base int64) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	start := base + int64(len(raw)-len(bytes.TrimLeft(raw, " \t\r\n")))
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonSyntax(raw, base, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &posError{start, fmt.Errorf("%w: expected an object, found %s", ErrSyntax, describe(tok))}
	}
	var (
		obj  object
		keys map[string]bool // the keys so far, once there are many (a plan's offsets)
	)
	for dec.More() {
		keyOff := base + skipSeparator(raw, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonSyntax(raw, base, err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, &posError{keyOff, fmt.Errorf("%w: expected a key", ErrSyntax)}
		}
		if keys == nil && len(obj) >= 16 {
			keys = make(map[string]bool, 2*len(obj))
			for _, f := range obj {
				keys[f.key] = true
			}
		}
		dup := keys[key]
		if keys == nil {
			_, dup = obj.get(key)
		}
		if dup {
			return nil, &posError{keyOff, fmt.Errorf("%w: duplicate key %q", ErrSyntax, key)}
		}
		if keys != nil {
			keys[key] = true
		}
		valOff := dec.InputOffset()
		if i := bytes.IndexByte(raw[valOff:], ':'); i >= 0 {
			valOff = skipSpace(raw, valOff+int64(i)+1)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonSyntax(raw, base, fmt.Errorf("value of %q: %w", key, err))
		}
		obj = append(obj, field{key: key, raw: v, keyOff: keyOff, valOff: base + valOff})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, jsonSyntax(raw, base, err)
	}
	end := base + skipSpace(raw, dec.InputOffset())
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &posError{end, fmt.Errorf("%w: trailing data after the object", ErrSyntax)}
	}
	return obj, nil
}

// skipSpace returns the offset of the first byte at or after off in raw that is not
// JSON white space (or len(raw)).
func skipSpace(raw []byte, off int64) int64 {
	for off < int64(len(raw)) {
		switch raw[off] {
		case ' ', '\t', '\r', '\n':
			off++
		default:
			return off
		}
	}
	return off
}

// skipSeparator is skipSpace past one comma too: from the end of a value to the start
// of the next key or element.
func skipSeparator(raw []byte, off int64) int64 {
	off = skipSpace(raw, off)
	if off < int64(len(raw)) && raw[off] == ',' {
		off = skipSpace(raw, off+1)
	}
	return off
}

// jsonSyntax turns a decoder error on raw (found at offset base of its document) into a
// *posError matching ErrSyntax at the byte where raw stops being well-formed JSON. A
// json.Decoder counts its offsets from places of its own, so the offset comes from
// scanning raw again.
func jsonSyntax(raw []byte, base int64, err error) error {
	off, ok := tracejson.SyntaxOffset(raw)
	if !ok {
		off = int64(len(raw))
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of JSON input"
	}
	return &posError{base + off, fmt.Errorf("%w: %s", ErrSyntax, msg)}
}

func describe(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", tok)
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}

// mismatch is the error for a value of the wrong JSON type: what raw is and what was
// required.
func mismatch(raw json.RawMessage, want string) error {
	return fmt.Errorf("%w: %s where %s is required", ErrSyntax, kindOf(raw), want)
}

// kindOf describes a JSON value: "a string", "an object", "the number 1.5", ...
func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if len(raw) > 32 {
		return "the number " + string(raw[:32]) + "..."
	}
	return "the number " + string(raw)
}

// prefixed returns err with prefix put before its detail: the text of the sentinel err
// matches stays first (StepError leaves it out), errors.Is still finds it.
func prefixed(prefix string, err error) error {
	return &prefixError{prefix, err}
}

type prefixError struct {
	prefix string
	err    error
}

func (e *prefixError) Error() string {
	p, rest := splitSentinel(e.err)
	return p + e.prefix + ": " + rest
}

func (e *prefixError) Unwrap() error { return e.err }

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// jsonString decodes a JSON string (null is not a string).
func jsonString(raw json.RawMessage) (string, error) {
	var s string
	if isNull(raw) {
		return "", fmt.Errorf("%w: null where a string is required", ErrSyntax)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", mismatch(raw, "a string")
	}
	return s, nil
}

// jsonInt decodes a JSON integer that fits int64 (no fraction, no exponent, no null).
func jsonInt(raw json.RawMessage) (int64, error) {
	var n int64
	if isNull(raw) {
		return 0, fmt.Errorf("%w: null where an integer is required", ErrSyntax)
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		if isIntLiteral(bytes.TrimSpace(raw)) {
			return 0, fmt.Errorf("%w: %s does not fit int64", ErrOverflow, bytes.TrimSpace(raw))
		}
		return 0, mismatch(raw, "an integer")
	}
	return n, nil
}

// isIntLiteral reports whether b is an optional minus sign followed by digits only.
func isIntLiteral(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte("-"))
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// jsonFloat decodes a JSON number.
func jsonFloat(raw json.RawMessage) (float64, error) {
	var f float64
	if isNull(raw) {
		return 0, fmt.Errorf("%w: null where a number is required", ErrSyntax)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, mismatch(raw, "a number")
	}
	return f, nil
}

// jsonBool decodes a JSON boolean.
func jsonBool(raw json.RawMessage) (bool, error) {
	var b bool
	if isNull(raw) {
		return false, fmt.Errorf("%w: null where a boolean is required", ErrSyntax)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, mismatch(raw, "a boolean")
	}
	return b, nil
}

// jsonList splits a JSON array into its raw elements (null is not an array).
func jsonList(raw json.RawMessage) ([]json.RawMessage, error) {
	var l []json.RawMessage
	if isNull(raw) {
		return nil, fmt.Errorf("%w: null where an array is required", ErrSyntax)
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, mismatch(raw, "an array")
	}
	return l, nil
}

// element is one value of a JSON array and its byte offset in the document.
type element struct {
	raw json.RawMessage
	off int64
}

// jsonListAt is jsonList for raw found at byte offset base of its document, with each
// element's offset; raw must be well-formed JSON.
func jsonListAt(raw json.RawMessage, base int64) ([]element, error) {
	if _, err := jsonList(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening bracket
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	var out []element
	for dec.More() {
		off := base + skipSeparator(raw, dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		out = append(out, element{raw: v, off: off})
	}
	return out, nil
}

// jsonArray decodes an array whose elements elem decodes; an empty array gives a non-nil
// empty slice.
func jsonArray[T any](raw json.RawMessage, elem func(json.RawMessage) (T, error)) ([]T, error) {
	l, err := jsonList(raw)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(l))
	for i, e := range l {
		if out[i], err = elem(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jsonInts decodes an array of integers; an empty array gives a non-nil empty slice.
func jsonInts(raw json.RawMessage) ([]int64, error) { return jsonArray(raw, jsonInt) }

// jsonStrings decodes an array of strings; an empty array gives nil.
func jsonStrings(raw json.RawMessage) ([]string, error) {
	out, err := jsonArray(raw, jsonString)
	if len(out) == 0 {
		return nil, err
	}
	return out, nil
}
