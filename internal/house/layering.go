package house

import (
	"go/ast"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The layers of the root package. A vocabulary file holds the types and
// constants every other file speaks in; the engine drives runs; operator
// files hold what an operator does to stored runs. Vocabulary is the floor:
// it may name nothing declared above it.
const (
	Vocabulary = "vocabulary"
	Engine     = "engine"
	Operator   = "operator"
)

// RootFiles is the root package's non-test files, by name.
func (t *Tree) RootFiles() map[string]*File {
	out := map[string]*File{}
	for _, f := range t.Files {
		if f.Dir() == "." && !f.Test {
			out[f.Path] = f
		}
	}
	return out
}

// LayerViolations lists, as "file Name" (a package-level name) or
// "file .name" (a method called through a selector), each identifier a
// vocabulary file names that an engine or operator file declares. layers
// maps a root file to its layer; files it does not name are left out.
//
// It reads syntax only: package-level names are the identifiers a file
// leaves unresolved (the parser resolves the file's own), and a selector
// counts when its name is a method declared above the floor and never a
// method or field of anything a vocabulary file declares.
func (t *Tree) LayerViolations(layers map[string]string) []string {
	files := t.RootFiles()
	upper, upperMethods, floorMembers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for name, f := range files {
		if f.AST == nil || layers[name] == "" {
			continue
		}
		if layers[name] == Vocabulary {
			collectMembers(f.AST, floorMembers)
			continue
		}
		collectDecls(f.AST, upper, upperMethods)
	}
	seen := map[string]bool{}
	for name, f := range files {
		if f.AST == nil || layers[name] != Vocabulary {
			continue
		}
		for _, id := range f.AST.Unresolved {
			if upper[id.Name] {
				seen[name+" "+id.Name] = true
			}
		}
		imports := importNames(f.AST)
		ast.Inspect(f.AST, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && imports[x.Name] {
				return false
			}
			if upperMethods[sel.Sel.Name] && !floorMembers[sel.Sel.Name] {
				seen[name+" ."+sel.Sel.Name] = true
			}
			return true
		})
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// collectDecls adds a file's package-level names and its method names.
func collectDecls(f *ast.File, names, methods map[string]bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil {
				methods[d.Name.Name] = true
			} else if d.Name.Name != "init" {
				names[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name != "_" {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
}

// collectMembers adds the names of a file's methods, struct fields and
// interface methods: a selector with one of these names may be the floor's own.
func collectMembers(f *ast.File, members map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil {
				members[n.Name.Name] = true
			}
		case *ast.Field:
			for _, id := range n.Names {
				members[id.Name] = true
			}
		}
		return true
	})
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// importNames is the names a file's imports bind.
func importNames(f *ast.File) map[string]bool {
	out := map[string]bool{}
	for _, s := range f.Imports {
		if s.Name != nil {
			out[s.Name.Name] = true
			continue
		}
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			continue
		}
		base := path.Base(p)
		if majorVersion.MatchString(base) {
			base = path.Base(path.Dir(p))
		}
		out[strings.TrimPrefix(base, "go-")] = true
		out[base] = true
	}
	return out
}
