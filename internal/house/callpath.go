package house

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

// A call path is what a reader meets following one call through the code
// in the order it runs: the files its functions live in, and how often the
// walk comes back to a file it had already left. The walk is read from a
// `dlv trace` of the module's functions (scripts/callpath.sh makes one):
// one goroutine, from one function's entry to its return.

// traceLine matches a `dlv trace` line: "> goroutine(N): pkg.Func(args)"
// on entry, ">> goroutine(N): pkg.Func => (results)" on return.
var traceLine = regexp.MustCompile(`^(>>?) goroutine\((\d+)\): ([^( ]+(?:\(\*[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\)\.[^( ]*)?)`)

// CallPath is one walk's figures.
type CallPath struct {
	// Files are the files of the module the walk entered, in the order
	// first entered, relative to the module's root.
	Files []string
	// Returns counts the calls that entered a function in a file the walk
	// had already left (a reader opening that file again).
	Returns int
	// Steps counts the same over calls and returns to a caller: every
	// step of the walk that lands in a file it had already left.
	Steps int
}

func (c CallPath) String() string {
	return fmt.Sprintf("%d files, %d returns to a file already left on calls (%d counting returns to callers)", len(c.Files), c.Returns, c.Steps)
}

// FuncFiles maps each function and method declared in the module at root
// (import path modpath) to its file, named as dlv names functions:
// "path.Func", "path.(*T).Method", "path.T.Method". Test files are mapped
// too, so a walk can tell test doubles from the product; testdata and
// node_modules are skipped.
func FuncFiles(root, modpath string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		pkg := modpath
		if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
			pkg += "/" + dir
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Name.Name != "init" {
				out[pkg+"."+dlvName(fd)] = filepath.ToSlash(rel)
			}
		}
		return nil
	})
	return out, err
}

// dlvName is fd's name as dlv prints it after the package path.
func dlvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t, star := fd.Recv.List[0].Type, false
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, true
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, _ := t.(*ast.Ident)
	if id == nil {
		return fd.Name.Name
	}
	if star {
		return "(*" + id.Name + ")." + fd.Name.Name
	}
	return id.Name + "." + fd.Name.Name
}

// fileOf is the file of fn, a closure ("F.func1", "F-range1") counted in
// its enclosing function's; "" for a function of no file in files.
func fileOf(files map[string]string, fn string) string {
	for name := fn; ; {
		if f, ok := files[name]; ok {
			return f
		}
		if i := strings.Index(name, "-range"); i > 0 {
			name = name[:i]
			continue
		}
		i := strings.LastIndex(name, ".")
		if i < 0 || strings.HasSuffix(name[:i], "/") {
			return ""
		}
		name = name[:i]
	}
}

// WalkCallPath reads a dlv trace and walks the nth call (from 1) of entry:
// its goroutine, from entry's entry line to its return. Functions in test
// files are test doubles, not the product's path: the walk steps over
// them.
func WalkCallPath(trace io.Reader, files map[string]string, entry string, nth int) (CallPath, error) {
	sc := bufio.NewScanner(trace)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	w := &pathWalk{visited: map[string]bool{}}
	seen, gor := 0, ""
	for sc.Scan() {
		m := traceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		enter, g, fn := m[1] == ">", m[2], m[3]
		if gor == "" {
			if !enter || fn != entry {
				continue
			}
			if seen++; seen < nth {
				continue
			}
			gor = g
		}
		if g != gor {
			continue
		}
		if w.step(enter, fn, fileOf(files, fn)) {
			return w.CallPath, nil
		}
	}
	if err := sc.Err(); err != nil {
		return CallPath{}, err
	}
	if gor == "" {
		return CallPath{}, fmt.Errorf("the trace holds %d calls of %s, not %d", seen, entry, nth)
	}
	return CallPath{}, fmt.Errorf("the trace ends before call %d of %s returns", nth, entry)
}

// pathWalk is a walk in progress: the call stack (each frame's function
// and file, "" for a test double) and the file the walk stands in.
type pathWalk struct {
	CallPath
	names, files []string
	visited      map[string]bool
	cur          string
}

// step takes one trace line; done once the entry returns.
func (w *pathWalk) step(enter bool, fn, file string) (done bool) {
	if strings.HasSuffix(file, "_test.go") || file == "" {
		file = ""
	}
	if enter {
		w.names, w.files = append(w.names, fn), append(w.files, file)
		w.move(file, true)
		return false
	}
	if len(w.names) == 0 || w.names[len(w.names)-1] != fn {
		// dlv prints a deferring function's return again after its
		// deferred calls; only the first pops its frame.
		return false
	}
	w.names, w.files = w.names[:len(w.names)-1], w.files[:len(w.files)-1]
	if len(w.names) == 0 {
		return true
	}
	for i := len(w.files) - 1; i >= 0; i-- {
		if w.files[i] != "" {
			w.move(w.files[i], false)
			break
		}
	}
	return false
}

// move puts the walk in file, counting a landing in a file already left.
func (w *pathWalk) move(file string, call bool) {
	if file == "" || file == w.cur {
		return
	}
	if w.visited[file] {
		w.Steps++
		if call {
			w.Returns++
		}
	} else {
		w.visited[file] = true
		w.Files = append(w.Files, file)
	}
	w.cur = file
}
