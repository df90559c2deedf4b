package trace

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/subarena/subarena/trace/internal/tracejson"
)

// FormatKey reads the JSON object data up to its "format" key, no further, and returns
// that key's string value: how a reader that detects formats by content (package
// trace/tracefile) tells a subarena-trace/v1 document from another JSON format. It does
// not judge the value. An object that is malformed before the key is the *StepError
// Parse would give (ErrSyntax, with its line and column); an object without the key is an
// error matching ErrUnknownFormat and ErrMissingKey, and one whose "format" is not a
// string an error matching ErrUnknownFormat and ErrFormat, each saying what the input
// looks like.
func FormatKey(data []byte) (string, error) {
	format, raw, found, err := sniffFormat(data)
	switch {
	case err != nil:
		off, _ := errorOffset(err)
		se := at(-1, off, err)
		se.Line, se.Column = tracejson.LineCol(data, off)
		return "", se
	case !found:
		return "", UnknownFormat("a JSON object without a \"format\" key (a trace starts {\"format\": \""+Format+
			"\", ...)", ErrMissingKey)
	case raw != nil:
		return "", UnknownFormat(fmt.Sprintf("a JSON object whose \"format\" is %s, not a string", kindOf(raw)), ErrFormat)
	}
	return format, nil
}

// sniffFormat reads the keys of the JSON object data up to "format": its value if it
// is a string, else its raw value; found is false when the object has no such key. err
// is a *posError matching ErrSyntax when the object is malformed before that key.
func sniffFormat(data []byte) (format string, notString json.RawMessage, found bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening brace
		return "", nil, false, jsonSyntax(data, 0, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, false, jsonSyntax(data, 0, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", nil, false, jsonSyntax(data, 0, err)
		}
		if key, _ := tok.(string); key == "format" {
			if s, err := jsonString(v); err == nil {
				return s, nil, true, nil
			}
			return "", v, true, nil
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return "", nil, false, jsonSyntax(data, 0, err)
	}
	return "", nil, false, nil
}

// formatError is an error of FormatKey: its text, and the sentinels it matches.
type formatError struct {
	msg string
	is  []error
}

func (e *formatError) Error() string   { return e.msg }
func (e *formatError) Unwrap() []error { return e.is }

// UnknownFormat returns the error a reader gives for input of no format it knows: its
// text is ErrUnknownFormat's followed by what the input looks like, and it matches
// ErrUnknownFormat and every error in also through errors.Is. FormatKey and the loaders
// (package trace/tracefile) use it.
func UnknownFormat(what string, also ...error) error {
	return &formatError{msg: ErrUnknownFormat.Error() + ": " + what, is: append([]error{ErrUnknownFormat}, also...)}
}

// UnsupportedFormat returns the error a reader gives for a document whose "format" names
// a format (or version) it does not read: its text is msg, and it matches
// ErrUnknownFormat and ErrFormat through errors.Is. The loaders (package
// trace/tracefile) and the ggml importer use it.
func UnsupportedFormat(msg string) error {
	return &formatError{msg: msg, is: []error{ErrUnknownFormat, ErrFormat}}
}
