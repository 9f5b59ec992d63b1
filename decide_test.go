package agentrt_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// There is one way to decide an approval, bound to the hash the decider was
// shown: the package functions ApproveShown and RejectShown, and the same
// two on an Operator's clock. No exported function or method of the core
// decides an approval without a shown hash, so no consumer can reach for an
// unbound form beside the bound one.
func TestDecide_OneWayBoundToAShownHash(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var got []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			n := fn.Name.Name
			if !strings.HasPrefix(n, "Approve") && !strings.HasPrefix(n, "Reject") {
				continue
			}
			recv := ""
			if fn.Recv != nil {
				switch x := fn.Recv.List[0].Type.(type) {
				case *ast.Ident:
					recv = x.Name + "."
				case *ast.StarExpr:
					recv = "*" + x.X.(*ast.Ident).Name + "."
				}
			}
			shown := false
			for _, p := range fn.Type.Params.List {
				for _, id := range p.Names {
					if id.Name == "shownHash" {
						shown = true
					}
				}
			}
			if !shown {
				n += "(unbound)"
			}
			got = append(got, recv+n)
		}
	}
	sort.Strings(got)
	want := []string{"ApproveShown", "Operator.ApproveShown", "Operator.RejectShown", "RejectShown"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the exported ways to decide are %v, want only %v", got, want)
	}
}
