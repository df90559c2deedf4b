package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// field is one key of a JSON object with its raw value, in document order.
type field struct {
	key string
	raw json.RawMessage
}

// object is a JSON object read strictly: keys are compared exactly (encoding/json would
// match them case-insensitively), duplicates are rejected, and the order is kept.
type object []field

// get returns the raw value of key and whether it is present.
func (o object) get(key string) (json.RawMessage, bool) {
	for _, f := range o {
		if f.key == key {
			return f.raw, true
		}
	}
	return nil, false
}

// readObject decodes raw, which must be exactly one JSON object.
func readObject(raw []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: expected an object, found %s", ErrSyntax, describe(tok))
	}
	var obj object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: expected a key", ErrSyntax)
		}
		if _, dup := obj.get(key); dup {
			return nil, fmt.Errorf("%w: duplicate key %q", ErrSyntax, key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: value of %q: %v", ErrSyntax, key, err)
		}
		obj = append(obj, field{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the object", ErrSyntax)
	}
	return obj, nil
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
		return "", fmt.Errorf("%w: %v", ErrSyntax, err)
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
		return 0, fmt.Errorf("%w: %v", ErrSyntax, err)
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
		return 0, fmt.Errorf("%w: %v", ErrSyntax, err)
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
		return false, fmt.Errorf("%w: %v", ErrSyntax, err)
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
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return l, nil
}

// jsonInts decodes an array of integers; an empty array gives a non-nil empty slice.
func jsonInts(raw json.RawMessage) ([]int64, error) {
	l, err := jsonList(raw)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(l))
	for i, e := range l {
		if out[i], err = jsonInt(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jsonStrings decodes an array of strings; an empty array gives nil.
func jsonStrings(raw json.RawMessage) ([]string, error) {
	l, err := jsonList(raw)
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, nil
	}
	out := make([]string, len(l))
	for i, e := range l {
		if out[i], err = jsonString(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// quote renders s as a JSON string without HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a Go string always encodes
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}
