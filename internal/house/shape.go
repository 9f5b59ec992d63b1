package house

import (
	"go/ast"
	"strings"
)

// The house rule's bounds.
const (
	MaxFileLines = 700
	MaxFuncLines = 80
)

// A Long is a file or function over its bound.
type Long struct {
	Key   string // "path" for a file, "path Func" or "path Type.Method" for a function
	Lines int
	Line  int  // where a function starts
	Test  bool // a function in a test-support package (see TestSupport)
}

// LongFiles is every product file over MaxFileLines, counted as shape.sh
// counts: newline characters, _test.go and generated files left out.
func (t *Tree) LongFiles() []Long {
	var out []Long
	for _, f := range t.Product() {
		if n := f.Lines(); n > MaxFileLines {
			out = append(out, Long{Key: f.Path, Lines: n})
		}
	}
	return out
}

// LongFuncs is every function declaration over MaxFuncLines in a product
// file, from its func keyword to its closing brace (the doc comment does
// not count). As in shape.sh, only top-level declarations with a body
// count: a function literal in a table (a var of handlers, a case list)
// is not measured, which is what "outside tables" means.
func (t *Tree) LongFuncs() []Long {
	var out []Long
	for _, f := range t.Product() {
		if f.AST == nil {
			continue
		}
		for _, d := range f.AST.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := t.Fset.Position(fd.Pos()).Line
			n := t.Fset.Position(fd.End()).Line - start + 1
			if n <= MaxFuncLines {
				continue
			}
			out = append(out, Long{Key: f.Path + " " + funcName(fd), Lines: n, Line: start, Test: TestSupport(f.Path)})
		}
	}
	return out
}

// TestSupport reports whether a file lives in a package that exists for
// tests (shape.sh's split): a directory whose name ends in "test", or
// testkit, testrig, enginekit, fakeprovider.
func TestSupport(path string) bool {
	for _, d := range strings.Split(pathDir(path), "/") {
		switch {
		case strings.HasSuffix(d, "test"), d == "testkit", d == "testrig", d == "enginekit", d == "fakeprovider":
			return true
		}
	}
	return false
}

// funcName is Func or Type.Method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch g := t.(type) {
	case *ast.IndexExpr:
		t = g.X
	case *ast.IndexListExpr:
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
