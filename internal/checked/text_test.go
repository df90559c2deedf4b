package checked

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"qkv", "qkv"},
		{"héllo wörld ✓", "héllo wörld ✓"},
		{"a\x1b]0;pwned\x07b", `a\x1b]0;pwned\x07b`},
		{"clear\x1b[2J", `clear\x1b[2J`},
		{"nul\x00", `nul\x00`},
		{"line\nbreak\ttab\r", `line\x0abreak\x09tab\x0d`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"bidi\u202eevil\u2066", `bidi\u202eevil\u2066`},
		{"non\uffff\ufffe", `non\uffff\ufffe`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"<b>&amp;", "<b>&amp;"},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestXMLIsWellFormed: whatever a name holds, XML of it in an element and an attribute
// makes a document an XML parser reads back, and no raw control character is left.
func TestXMLIsWellFormed(t *testing.T) {
	names := []string{"a\x00b", "\x1b[2J", "</title><script>x</script>", `"'&<>`, "\xff\xfe", "\ufffe\uffff", "ok"}
	for i := 0; i < 256; i++ {
		names = append(names, string(rune(i)), string([]byte{byte(i)}))
	}
	for _, n := range names {
		doc := `<svg title="` + XML(n) + `"><title>` + XML(n) + `</title></svg>`
		dec := xml.NewDecoder(strings.NewReader(doc))
		for {
			_, err := dec.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("name %q: %v in %q", n, err, doc)
				}
				break
			}
		}
		for _, r := range XML(n) {
			if r < 0x20 {
				t.Fatalf("name %q: raw control %q left", n, r)
			}
		}
	}
}
