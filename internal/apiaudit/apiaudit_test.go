package apiaudit

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// pkg is one directory's non-test package, as the audit sees it.
type pkg struct {
	dir, importPath, name string
	files                 []*ast.File // non-test files
	tests                 []*ast.File // _test.go files of the directory
	doc                   string      // the package comment
}

// decl is one exported top-level name of a package.
type decl struct {
	name string
	pos  token.Position
	err  bool // an error sentinel or error type
}

// moduleRoot returns the directory of the go.mod above the test's directory
// that declares the root module.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(b, []byte("module github.com/subarena/subarena\n")) {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod of module github.com/subarena/subarena above the test")
		}
		dir = up
	}
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// load parses every Go file under root, grouped by directory, each
// directory's import path taken from the nearest go.mod above it.
func load(t *testing.T, root string) (*token.FileSet, map[string]*pkg) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string]*pkg{}
	modules := map[string]string{} // directory -> module path
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if p != root && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "node_modules") {
				return filepath.SkipDir
			}
			if b, err := os.ReadFile(filepath.Join(p, "go.mod")); err == nil {
				if m := moduleLine.FindSubmatch(b); m != nil {
					modules[p] = string(m[1])
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		pk := pkgs[dir]
		if pk == nil {
			pk = &pkg{dir: dir, importPath: importPath(dir, modules)}
			pkgs[dir] = pk
		}
		if strings.HasSuffix(p, "_test.go") {
			pk.tests = append(pk.tests, f)
			return nil
		}
		pk.files = append(pk.files, f)
		pk.name = f.Name.Name
		if f.Doc != nil {
			pk.doc += f.Doc.Text()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, pkgs
}

// importPath joins the module path of the nearest go.mod above dir with
// dir's path below it.
func importPath(dir string, modules map[string]string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if m, ok := modules[d]; ok {
			rel, _ := filepath.Rel(d, dir)
			if rel == "." {
				return m
			}
			return path.Join(m, filepath.ToSlash(rel))
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// exported lists the exported top-level names a package's files declare.
func exported(fset *token.FileSet, pk *pkg) []decl {
	var out []decl
	add := func(id *ast.Ident, err bool) {
		if id.IsExported() {
			out = append(out, decl{name: id.Name, pos: fset.Position(id.Pos()), err: err})
		}
	}
	for _, f := range pk.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name, false)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name, strings.HasSuffix(s.Name.Name, "Error"))
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n, d.Tok == token.VAR && strings.HasPrefix(n.Name, "Err"))
						}
					}
				}
			}
		}
	}
	return out
}

// idents adds every identifier under n to set.
func idents(n ast.Node, set map[string]bool) {
	if n == nil {
		return
	}
	ast.Inspect(n, func(x ast.Node) bool {
		if id, ok := x.(*ast.Ident); ok {
			set[id.Name] = true
		}
		return true
	})
}

// receiverType returns the name of a method's receiver type.
func receiverType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	e := fd.Recv.List[0].Type
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// reachable returns the names a caller meets through the package's exported
// declarations: types in exported signatures, fields and value types, and
// the values of exported types (enums).
func reachable(pk *pkg) map[string]bool {
	set := map[string]bool{}
	exportedTypes := map[string]bool{}
	for _, f := range pk.files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, s := range gd.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						exportedTypes[ts.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range pk.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if r := receiverType(d); d.Recv != nil && !ast.IsExported(r) {
					continue
				}
				idents(d.Type, set)
			case *ast.GenDecl:
				var last ast.Expr // the type an iota group's later specs repeat
				if d.Tok == token.CONST && enumGroup(d, exportedTypes) {
					for _, s := range d.Specs {
						for _, n := range s.(*ast.ValueSpec).Names {
							set[n.Name] = true // a constant of a group typed by an exported type
						}
					}
				}
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								if len(fl.Names) == 0 || slices.ContainsFunc(fl.Names, func(n *ast.Ident) bool { return n.IsExported() }) {
									idents(fl.Type, set)
								}
							}
							continue
						}
						idents(s.Type, set)
					case *ast.ValueSpec:
						typ := s.Type
						if typ == nil && len(s.Values) == 0 {
							typ = last
						}
						if s.Type != nil || len(s.Values) > 0 {
							last = s.Type
						}
						if typ == nil && len(s.Values) == 1 {
							switch v := s.Values[0].(type) {
							case *ast.CallExpr: // a conversion, Kind(3)
								if id, ok := v.Fun.(*ast.Ident); ok && exportedTypes[id.Name] {
									typ = id
								}
							case *ast.CompositeLit: // a literal's type
								typ = v.Type
							}
						}
						exportedName := slices.ContainsFunc(s.Names, func(n *ast.Ident) bool { return n.IsExported() })
						if !exportedName {
							continue
						}
						idents(typ, set)
						if id, ok := typ.(*ast.Ident); ok && exportedTypes[id.Name] {
							for _, n := range s.Names {
								set[n.Name] = true // a value of an exported type
							}
						}
					}
				}
			}
		}
	}
	return set
}

// enumGroup reports whether a const group declares a constant of one of
// the package's exported types: its other constants are values of that
// enum too (AccessReadWrite = AccessRead | AccessWrite).
func enumGroup(d *ast.GenDecl, exportedTypes map[string]bool) bool {
	for _, s := range d.Specs {
		if id, ok := s.(*ast.ValueSpec).Type.(*ast.Ident); ok && exportedTypes[id.Name] {
			return true
		}
	}
	return false
}

// inExamples returns the names of pk that its runnable examples use.
func inExamples(pk *pkg) map[string]bool {
	set := map[string]bool{}
	for _, f := range pk.tests {
		local := ""
		if f.Name.Name != pk.name { // an external test package
			local = localName(f, pk)
			if local == "" {
				continue
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fd.Name.Name, "Example") {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && local != "" && id.Name == local {
						set[x.Sel.Name] = true
					}
				case *ast.Ident:
					if local == "" {
						set[x.Name] = true
					}
				}
				return true
			})
		}
	}
	return set
}

// localName returns the name file f refers to package pk by, or "".
func localName(f *ast.File, pk *pkg) string {
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil || p != pk.importPath {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return pk.name
	}
	return ""
}

// usedOutside returns, per import path, the names other packages (and
// commands, examples and nested modules) select from it.
func usedOutside(pkgs map[string]*pkg) map[string]map[string]bool {
	byPath := map[string]*pkg{}
	for _, pk := range pkgs {
		if pk.importPath != "" {
			byPath[pk.importPath] = pk
		}
	}
	used := map[string]map[string]bool{}
	for _, pk := range pkgs {
		for _, f := range slices.Concat(pk.files, pk.tests) {
			names := map[string]string{} // local name -> import path
			for _, im := range f.Imports {
				p, err := strconv.Unquote(im.Path.Value)
				if err != nil {
					continue
				}
				dep := byPath[p]
				if dep == nil || dep == pk {
					continue
				}
				local := dep.name
				if im.Name != nil {
					local = im.Name.Name
				}
				names[local] = p
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if x, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := x.X.(*ast.Ident); ok {
						if p, ok := names[id.Name]; ok {
							if used[p] == nil {
								used[p] = map[string]bool{}
							}
							used[p][x.Sel.Name] = true
						}
					}
				}
				return true
			})
		}
	}
	return used
}

// named reports whether the package comment names id as a word.
func named(doc, id string) bool {
	for i := 0; ; {
		j := strings.Index(doc[i:], id)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(id)
		before := j == 0 || !isWord(rune(doc[j-1]))
		after := end == len(doc) || !isWord(rune(doc[end]))
		if before && after {
			return true
		}
		i = end
	}
}

func isWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// TestExportedNamesHaveUsers fails for every exported name of a library
// package that nothing outside the package uses and that is not documented
// API (see the package comment for what counts).
func TestExportedNamesHaveUsers(t *testing.T) {
	root := moduleRoot(t)
	fset, pkgs := load(t, root)
	used := usedOutside(pkgs)
	var bad []string
	seen := 0 // exported names looked at, so that finding none fails
	for _, pk := range pkgs {
		if len(pk.files) == 0 || pk.name == "main" || pk.importPath == "" {
			continue
		}
		reach, examples := reachable(pk), inExamples(pk)
		for _, d := range exported(fset, pk) {
			seen++
			if d.err || used[pk.importPath][d.name] || reach[d.name] || examples[d.name] || named(pk.doc, d.name) {
				continue
			}
			rel, _ := filepath.Rel(root, d.pos.Filename)
			bad = append(bad, rel+":"+strconv.Itoa(d.pos.Line)+": "+pk.name+"."+d.name)
		}
	}
	if seen == 0 || pkgs[root] == nil {
		t.Fatalf("loaded no exported names (%d names, root package loaded: %v)", seen, pkgs[root] != nil)
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b + " is exported, but nothing outside its package uses it and it is not documented API")
	}
	if len(bad) > 0 {
		t.Logf("%d exported names without a user", len(bad))
	}
}
