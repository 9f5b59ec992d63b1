package agentrt_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
	"strings"
	"testing"
)

// The root package's public API, as a consumer compiles against it: every
// exported top-level name and every exported method, each with the type
// expression of its declaration when it is a function.
func apiDecls(t *testing.T) map[string]*ast.FuncType {
	t.Helper()
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if bp.Name != "agentrt" {
		t.Fatalf("package %q, want agentrt", bp.Name)
	}
	fset := token.NewFileSet()
	api := map[string]*ast.FuncType{}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					recv := receiverName(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					name = recv + "." + name
				}
				api[name] = d.Type
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							api[s.Name.Name] = nil
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								api[n.Name] = nil
							}
						}
					}
				}
			}
		}
	}
	if len(api) < 50 {
		t.Fatalf("found %d exported names; the parse missed the package", len(api))
	}
	return api
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// hookShaped reports whether a parameter's type is a crash hook
// (func(point, runID string, step int)) or a clock (func() time.Time): what
// a test hook takes.
func hookShaped(e ast.Expr) bool {
	ft, ok := e.(*ast.FuncType)
	if !ok {
		return false
	}
	var params []string
	for _, p := range ft.Params.List {
		n := max(len(p.Names), 1)
		for range n {
			params = append(params, types.ExprString(p.Type))
		}
	}
	var results []string
	if ft.Results != nil {
		for _, r := range ft.Results.List {
			results = append(results, types.ExprString(r.Type))
		}
	}
	sig := strings.Join(params, ",") + "->" + strings.Join(results, ",")
	return sig == "string,string,int->" || sig == "->time.Time"
}

// The engine's test hooks (a crash hook, a lease clock) are reachable only
// from this module: no exported name of the root package mentions a test or
// a hook, and no exported function or method takes a crash hook or a clock,
// since a consumer that could move a driver's lease clock could take over a
// live lease.
func TestAPI_RootPackageExportsNoTestHook(t *testing.T) {
	api := apiDecls(t)
	names := make([]string, 0, len(api))
	for n := range api {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.Contains(n, "Test") || strings.Contains(n, "Hook") {
			t.Errorf("exported %s names a test hook", n)
		}
		ft := api[n]
		if ft == nil {
			continue
		}
		for _, p := range ft.Params.List {
			if hookShaped(p.Type) {
				t.Errorf("exported %s takes a %s: a test hook's parameter", n, types.ExprString(p.Type))
			}
		}
	}
}
