package trace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestEverySentinelIsFound: every package-level Err... variable of this
// package is made by newSentinel or newSentinelOf, so that Detail, RuleOf and
// the key errors' prefixes find it in an error's chain; a sentinel made any
// other way would be missed without a test failing.
func TestEverySentinelIsFound(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range pkgs["trace"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					n++
					var fn *ast.Ident
					if call, ok := vs.Values[i].(*ast.CallExpr); ok {
						fn, _ = call.Fun.(*ast.Ident)
					}
					if fn == nil || (fn.Name != "newSentinel" && fn.Name != "newSentinelOf") {
						t.Errorf("%s: %s is not made by newSentinel or newSentinelOf", fset.Position(name.Pos()), name.Name)
					}
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d sentinels, want every Err... of errors.go", n)
	}
}

// TestDetailStripsEverySentinel: Detail leaves out the text of whichever
// sentinel an error wraps, the rule-less ones and the refinements included.
func TestDetailStripsEverySentinel(t *testing.T) {
	for _, s := range []error{ErrSyntax, ErrUnknownFormat, ErrShape, ErrShapeStrides, ErrDuplicateEngine, ErrPlan, ErrStopped} {
		err := stepErr(3, s, "the detail")
		se, ok := err.(*StepError)
		if !ok {
			t.Fatalf("%v: not a *StepError", s)
		}
		if got := Detail(se.Err); got != "the detail" {
			t.Errorf("Detail of %q: %q, want %q", se.Err, got, "the detail")
		}
		if got := (&prefixError{"at x", se.Err}).Error(); got != s.Error()+": at x: the detail" {
			t.Errorf("prefixed %q: %q", se.Err, got)
		}
	}
}
