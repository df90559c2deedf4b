// Package scenario is subarena's scenario language: a text script of host calls into
// the Allocator, each optionally followed by the output it is expected to print — its
// grammar, its parser (Parse, ParseFile) and its one interpreter (Interpret), which
// reads a script's commands, keeps the names they give, and has a Host carry them out.
// Run is Interpret with the real Allocator as the Host, checking the Allocator's
// invariants after every command. It is the one format in which hand-written cases are
// written, and it has three readers: this package's TestScenarios (the files of
// testdata/scenarios and the seed files here), package fuzz (whose seed scenarios are
// the files Seeds returns, turned into fuzz Programs by Interpret with a program builder
// as the Host) and the CLI (subarena scenario FILE..., which runs or checks scripts).
//
// The interpreter reads the Allocator only through its public API: what a "state"
// command prints comes from Allocator.Snapshot, a copy taken under the Allocator's
// lock. The package sits beside package fuzz, above the root package, so the root
// package's API carries no test language.
//
// # Where the files live
//
// The hand-written cases are testdata/scenarios/*.txt at the repository's root. The
// fuzz seeds are seeds/*.txt in this package's directory, embedded (Seeds): package
// fuzz, a non-test package, reads them at run time, and //go:embed reaches only files
// under the embedding package's directory. TestScenarios runs both sets, so every
// seed's expected outputs are checked against the Allocator too.
//
// # Grammar
//
// A file is a sequence of lines (LF or CRLF). Leading and trailing blanks of a line are
// ignored except in expected output.
//
//	file      = header { block }
//	header    = { comment | directive | blank }
//	directive = "#!" word                  (only in the header; "hazard" is the one defined)
//	comment   = "#" text
//	block     = { comment | blank } command [ "----" { output } blank ]
//	command   = name { arg }               (words separated by blanks)
//	arg       = word | key "=" value       (positional arguments, then keys, in any mix)
//
// The lines after "----" up to the next blank line are the command's expected output,
// verbatim. A command without "----" has no expected output (readers that compare
// outputs treat it as a difference; the root test's -rewrite fills it in).
//
// The directive "#! hazard" marks a scenario with a premature-reuse hazard: a reader
// that IR-order release lets a writer overtake, so the unsafe policy must be caught in
// some interleaving (package fuzz checks this).
//
// # Commands
//
// Names (of engines, buffers, views, ops, claims, reservations) are words without "=".
// INT is a decimal integer, INTS a comma-separated list of them (possibly empty),
// ACCESS one of read, write, read-write. A buffer's name used where a view is expected
// means the buffer's whole view.
//
//	new engines=E[:KIND],... [policy=P] [granule=INT] [capacity=INT]
//	                                     a new Allocator and Timeline; KIND is compute
//	                                     (default), copy, network or host; the policy
//	                                     is subrange-fenced (the Config zero value),
//	                                     granule 256, capacity 1048576 unless given
//	alloc BUF SIZE ENGINE                Alloc(SIZE) at the point of ENGINE
//	view V OF offset=INT shape=INTS strides=INTS elem=INT   OF.View(layout)
//	dense V BUF shape=INTS elem=INT [offset=INT]            a row-major view of BUF
//	slice V OF DIM START STOP STEP       OF.Slice
//	select V OF DIM INDEX                OF.Select
//	reshape V OF INTS                    OF.Reshape
//	permute V OF INTS                    OF.Permute
//	split V OF DIM PART INTS             OF.Split(DIM, sizes...)[PART]
//	chain V OF DEPTH                     DEPTH reshapes of OF, alternately flat and back
//	submit OP ENGINE [waits=OP,...]      Submit an op on ENGINE
//	use OP VIEW ACCESS                   the op uses the view
//	release BUF                          Release
//	discard VIEW                         Discard
//	complete OP                          the op completes (fuzz ignores it)
//	sync OP                              the host waits for the op (HostSync)
//	donate BUF VIEW OP                   Donate the view's bytes to OP as BUF
//	claim C VIEW                         Claim; then commit C or abandon C
//	reserve R VIEW                       Reserve; then activate R OP [access=ACCESS] or cancel R
//	state                                print the arena's state
//
// Parse checks the syntax, the arity and the integer arguments of every command; names
// are resolved by the reader, which reports an unknown one with File.Errorf. ParseFile
// refuses a file of more than MaxFileSize bytes (16 MiB) without reading it whole.
package scenario

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/subarena/subarena/trace"
)

// ErrInvalid is matched (errors.Is) by every error this package returns for bad input,
// and by the errors readers make with File.Errorf. Such errors start "FILE:LINE: ".
var ErrInvalid = errors.New("scenario: invalid scenario")

// File is a parsed scenario file.
type File struct {
	// Name is the file's name as given to Parse; errors start with it.
	Name string
	// Hazard is set by the "#! hazard" directive.
	Hazard bool
	// Header is the file's leading comment, directive and blank lines, verbatim.
	Header []string
	// Blocks are the commands in order.
	Blocks []Block
	// Trailer are the comment lines after the last command.
	Trailer []string
}

// Block is one command with the comment lines before it and its expected output.
type Block struct {
	// Line is the 1-based line number of the command.
	Line int
	// Comments are the comment lines between the previous block and this command.
	Comments []string
	// Cmd is the command.
	Cmd Command
	// Want is the expected output (lines joined by "\n"); HasWant says whether the
	// command had a "----" line at all.
	Want    string
	HasWant bool
}

// Command is one parsed command line. Parse has checked its arguments against the
// command's signature, so the accessors below do not fail on a parsed Command.
type Command struct {
	// Name is the command's first word.
	Name string
	// Args are the positional arguments.
	Args []string
	// Keys are the key=value arguments.
	Keys map[string]string
	// Text is the command line as written, trimmed.
	Text string
}

// String returns the command line as written.
func (c Command) String() string { return c.Text }

// Int returns positional argument i as an integer (0 if it is not one).
func (c Command) Int(i int) int64 {
	if i >= len(c.Args) {
		return 0
	}
	v, _ := strconv.ParseInt(c.Args[i], 10, 64)
	return v
}

// Ints returns positional argument i as an integer list.
func (c Command) Ints(i int) []int64 {
	if i >= len(c.Args) {
		return nil
	}
	v, _ := parseInts(c.Args[i])
	return v
}

// Key returns the value of key k and whether it was given.
func (c Command) Key(k string) (string, bool) {
	v, ok := c.Keys[k]
	return v, ok
}

// KeyInt returns key k as an integer, or def when it is absent.
func (c Command) KeyInt(k string, def int64) int64 {
	s, ok := c.Keys[k]
	if !ok {
		return def
	}
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

// KeyInts returns key k as an integer list (empty when absent).
func (c Command) KeyInts(k string) []int64 {
	v, _ := parseInts(c.Keys[k])
	return v
}

// KeyList returns key k as a comma-separated list of words (nil when absent or empty).
func (c Command) KeyList(k string) []string {
	if c.Keys[k] == "" {
		return nil
	}
	return strings.Split(c.Keys[k], ",")
}

// Engine is one engine of a "new" command.
type Engine struct {
	Name string
	Kind string // compute, copy, network or host
}

// Engines returns the engines of a "new" command, in order.
func (c Command) Engines() []Engine {
	var out []Engine
	for _, e := range c.KeyList("engines") {
		name, kind, _ := strings.Cut(e, ":")
		if kind == "" {
			kind = "compute"
		}
		out = append(out, Engine{Name: name, Kind: kind})
	}
	return out
}

// Argument kinds of a signature.
const (
	argName    = 'n' // a name
	argInt     = 'i' // an integer
	argInts    = 'l' // an integer list
	argAccess  = 'a' // read, write or read-write
	argEngines = 'e' // NAME[:KIND],...
	argNames   = 'N' // NAME,...
	argWord    = 'w' // any word
)

type signature struct {
	args string          // kinds of the positional arguments
	keys map[string]byte // kinds of the keys
	req  string          // the keys that must be given, separated by blanks
}

var signatures = map[string]signature{
	"new":      {keys: map[string]byte{"engines": argEngines, "policy": argWord, "granule": argInt, "capacity": argInt}, req: "engines"},
	"alloc":    {args: "nin"},
	"view":     {args: "nn", keys: map[string]byte{"offset": argInt, "shape": argInts, "strides": argInts, "elem": argInt}, req: "offset shape strides elem"},
	"dense":    {args: "nn", keys: map[string]byte{"offset": argInt, "shape": argInts, "elem": argInt}, req: "shape elem"},
	"slice":    {args: "nniiii"},
	"select":   {args: "nnii"},
	"reshape":  {args: "nnl"},
	"permute":  {args: "nnl"},
	"split":    {args: "nniil"},
	"chain":    {args: "nni"},
	"submit":   {args: "nn", keys: map[string]byte{"waits": argNames}},
	"use":      {args: "nna"},
	"release":  {args: "n"},
	"discard":  {args: "n"},
	"complete": {args: "n"},
	"sync":     {args: "n"},
	"donate":   {args: "nnn"},
	"claim":    {args: "nn"},
	"commit":   {args: "n"},
	"abandon":  {args: "n"},
	"reserve":  {args: "nn"},
	"activate": {args: "nn", keys: map[string]byte{"access": argAccess}},
	"cancel":   {args: "n"},
	"state":    {},
}

// Errorf returns an error "NAME:LINE: message" matching ErrInvalid, for a reader that
// finds something wrong with block b of f (an unknown name, a command out of place).
func (f *File) Errorf(b *Block, format string, args ...any) error {
	line := 0
	if b != nil {
		line = b.Line
	}
	return errAt(f.Name, line, fmt.Sprintf(format, args...))
}

func errAt(name string, line int, msg string) error {
	return fmt.Errorf("%s:%d: %s: %w", name, line, msg, ErrInvalid)
}

// MaxFileSize is the most bytes a scenario file may have: 16 MiB, far above any script
// written by hand or generated by the fuzzer. ParseFile stops reading one byte past it,
// so an endless file (a device, a pipe) costs bounded time and memory.
const MaxFileSize = 16 << 20

// ParseFile reads and parses the file at path. A file of more than MaxFileSize bytes is
// refused with an error matching ErrInvalid and trace.ErrLimit.
func ParseFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w: larger than the %d B (16 MiB) a scenario file may have (%w)", path, ErrInvalid,
			int64(MaxFileSize), trace.ErrLimit)
	}
	return Parse(path, data)
}

// Parse parses a scenario file; name is used in errors. The first error is returned,
// as "NAME:LINE: message" matching ErrInvalid. A script is UTF-8 text without control
// characters other than tab (the command prints it back, so none may reach a terminal).
func Parse(name string, data []byte) (*File, error) {
	f := &File{Name: name}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, line := range lines {
		if k := strings.IndexFunc(line, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }); k >= 0 {
			return nil, errAt(name, i+1, fmt.Sprintf("control character %q in the text (a script is text; it is printed back)",
				line[k:k+1]))
		}
		if !utf8.ValidString(line) {
			return nil, errAt(name, i+1, "invalid UTF-8")
		}
	}
	inHeader := true
	var comments []string
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		l := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(l, "#!"):
			if !inHeader {
				return nil, errAt(name, i+1, "directive "+strconvQuote(l)+" after the first command")
			}
			switch d := strings.TrimSpace(l[2:]); d {
			case "hazard":
				if f.Hazard {
					return nil, errAt(name, i+1, "repeated directive "+strconvQuote(l))
				}
				f.Hazard = true
			default:
				return nil, errAt(name, i+1, "unknown directive "+strconvQuote(d))
			}
			f.Header = append(f.Header, l)
			continue
		case l == "" || strings.HasPrefix(l, "#"):
			if inHeader {
				f.Header = append(f.Header, l)
			} else if l != "" {
				comments = append(comments, l)
			}
			continue
		case l == "----":
			return nil, errAt(name, i+1, `"----" without a command before it`)
		}
		inHeader = false
		cmd, err := parseCommand(l)
		if err != nil {
			return nil, errAt(name, i+1, err.Error())
		}
		b := Block{Line: i + 1, Comments: comments, Cmd: cmd}
		comments = nil
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "----" {
			b.HasWant = true
			i += 2
			var want []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				want = append(want, lines[i])
			}
			b.Want = strings.Join(want, "\n")
		}
		f.Blocks = append(f.Blocks, b)
	}
	f.Trailer = comments
	return f, nil
}

// strconvQuote quotes s for a message, shortening a long s.
func strconvQuote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

func parseCommand(line string) (Command, error) {
	words := strings.Fields(line)
	c := Command{Name: words[0], Text: strings.Join(words, " "), Keys: map[string]string{}}
	sig, ok := signatures[c.Name]
	if !ok {
		return c, fmt.Errorf("unknown command %s", strconvQuote(c.Name))
	}
	for _, w := range words[1:] {
		k, v, isKey := strings.Cut(w, "=")
		if !isKey {
			c.Args = append(c.Args, w)
			continue
		}
		kind, known := sig.keys[k]
		if !known {
			return c, fmt.Errorf("%s: unknown key %s", c.Name, strconvQuote(k))
		}
		if _, dup := c.Keys[k]; dup {
			return c, fmt.Errorf("%s: repeated key %s", c.Name, strconvQuote(k))
		}
		if err := checkArg(kind, v); err != nil {
			return c, fmt.Errorf("%s: %s=%s: %v", c.Name, k, strconvQuote(v), err)
		}
		c.Keys[k] = v
	}
	if len(c.Args) != len(sig.args) {
		return c, fmt.Errorf("%s takes %d positional arguments, got %d", c.Name, len(sig.args), len(c.Args))
	}
	for i, a := range c.Args {
		if err := checkArg(sig.args[i], a); err != nil {
			return c, fmt.Errorf("%s: argument %d %s: %v", c.Name, i+1, strconvQuote(a), err)
		}
	}
	for _, k := range strings.Fields(sig.req) {
		if _, ok := c.Keys[k]; !ok {
			return c, fmt.Errorf("%s: missing key %s", c.Name, k)
		}
	}
	return c, nil
}

func checkArg(kind byte, v string) error {
	switch kind {
	case argName:
		if v == "" {
			return errors.New("empty name")
		}
	case argInt:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return errors.New("not an integer")
		}
	case argInts:
		if _, err := parseInts(v); err != nil {
			return err
		}
	case argAccess:
		if _, ok := accesses[v]; !ok {
			return errors.New("not read, write or read-write")
		}
	case argEngines:
		if v == "" {
			return errors.New("no engines")
		}
		for _, e := range strings.Split(v, ",") {
			n, kind, _ := strings.Cut(e, ":")
			if n == "" {
				return errors.New("empty engine name")
			}
			switch kind {
			case "", "compute", "copy", "network", "host":
			default:
				return fmt.Errorf("unknown engine kind %s", strconvQuote(kind))
			}
		}
	case argNames:
		for _, n := range strings.Split(v, ",") {
			if n == "" {
				return errors.New("empty name in list")
			}
		}
	}
	return nil
}

var accesses = map[string]bool{"read": true, "write": true, "read-write": true}

func parseInts(s string) ([]int64, error) {
	if s == "" {
		return []int64{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer list", strconvQuote(s))
		}
		out[i] = v
	}
	return out, nil
}

// Format writes f back with outputs as the expected outputs: the header, then every
// block's comments, command, "----" and output, and a blank line. outputs[i] is block
// i's output; a block beyond outputs keeps its expected output.
func (f *File) Format(outputs []string) []byte {
	var sb strings.Builder
	for _, l := range f.Header {
		sb.WriteString(l + "\n")
	}
	for i, b := range f.Blocks {
		for _, c := range b.Comments {
			sb.WriteString(c + "\n")
		}
		out, has := b.Want, b.HasWant
		if i < len(outputs) {
			out, has = outputs[i], true
		}
		sb.WriteString(b.Cmd.Text + "\n")
		if has {
			sb.WriteString("----\n" + out + "\n")
		}
		sb.WriteString("\n")
	}
	for _, c := range f.Trailer {
		sb.WriteString(c + "\n")
	}
	return []byte(sb.String())
}

//go:embed seeds/*.txt
var seeds embed.FS

// Seeds returns the seed scenarios of package fuzz: the files seeds/*.txt of this
// package's directory, in the order of their names. A file's numeric prefix ("1-")
// fixes that order; SeedName strips it.
func Seeds() ([]*File, error) {
	ents, err := fs.ReadDir(seeds, "seeds")
	if err != nil {
		return nil, err
	}
	var out []*File
	for _, e := range ents {
		data, err := seeds.ReadFile("seeds/" + e.Name())
		if err != nil {
			return nil, err
		}
		f, err := Parse(path.Join("fuzz/scenario/seeds", e.Name()), data)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// SeedName returns the scenario name of a file: its base name without the extension
// and without a leading "DIGITS-" prefix (seeds/1-view-chain.txt is "view-chain").
func SeedName(file string) string {
	n := strings.TrimSuffix(path.Base(file), path.Ext(file))
	if i := strings.IndexByte(n, '-'); i > 0 && strings.Trim(n[:i], "0123456789") == "" {
		n = n[i+1:]
	}
	return n
}
