package checked

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// Text returns s with every unsafe character written as a Go escape (see the package
// documentation): safe to print on a terminal, one line.
func Text(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafe(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// XML returns s escaped for XML 1.0 text and attribute values: Text's escapes, then the
// markup characters & < > " ' as entities.
func XML(s string) string {
	return html.EscapeString(Text(s))
}

// needsEscape reports whether Text changes s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) {
			return true
		}
		i += n
	}
	return false
}

// unsafe reports whether r is written as an escape: a control character, a
// bidirectional formatting character, or a noncharacter XML 1.0 excludes.
func unsafe(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	case r == 0xfffe || r == 0xffff:
		return true
	}
	return false
}
