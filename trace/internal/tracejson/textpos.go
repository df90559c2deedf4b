package tracejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// SyntaxOffset returns the offset of the byte at which data stops being well-formed
// JSON (len(data) when it ends too early), and false when data is one well-formed value.
func SyntaxOffset(data []byte) (int64, bool) {
	var v json.RawMessage
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return 0, false
	}
	// Offset counts the bytes read, the offending one included; at the end of the input
	// there is none.
	if se.Offset > 0 && se.Offset <= int64(len(data)) && !strings.HasPrefix(se.Error(), "unexpected end") {
		return se.Offset - 1, true
	}
	return min(max(se.Offset, 0), int64(len(data))), true
}

// LineCol returns the line and column, both counted from 1, of byte offset off in data;
// the column counts characters (a tab is one), and off = len(data) is the place just
// past the last byte.
func LineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	head := data[:off]
	line = 1 + bytes.Count(head, []byte("\n"))
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[i+1:]
	}
	return line, 1 + utf8.RuneCount(head)
}
