package house

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// A Tree is every Go file of a checkout, read and (outside _test.go files)
// parsed once, so that each rule walks the same snapshot.
type Tree struct {
	Root  string
	Fset  *token.FileSet
	Files []*File // sorted by Path
}

// A File is one Go file of a Tree.
type File struct {
	Path      string // slash-separated, relative to the root
	Src       []byte
	Test      bool      // a _test.go file
	Generated bool      // carries "Code generated" and "DO NOT EDIT"
	AST       *ast.File // nil for test files and for files that do not parse
	ParseErr  error
}

// Lines counts the file's lines as shape.sh does: its newline characters.
func (f *File) Lines() int { return bytes.Count(f.Src, []byte("\n")) }

// Dir is the file's directory, "." for the root.
func (f *File) Dir() string { return pathDir(f.Path) }

// FindRoot walks up from dir to the directory holding go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("house: no go.work in this directory or any above it")
		}
		dir = up
	}
}

// skipDir reports whether a walk leaves a directory out: testdata and
// node_modules (shape.sh leaves out paths holding either) and hidden ones
// (.git, .ci).
func skipDir(name string) bool {
	return name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && name != ".")
}

// Load reads every .go file below root (every module of go.work lives
// below it) and parses the ones that are not tests, in parallel.
func Load(root string) (*Tree, error) {
	t := &Tree{Root: root, Fset: token.NewFileSet()}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		t.Files = append(t.Files, &File{Path: filepath.ToSlash(rel), Test: strings.HasSuffix(p, "_test.go")})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("house: walking %s: %w", root, err)
	}
	sort.Slice(t.Files, func(i, j int) bool { return t.Files[i].Path < t.Files[j].Path })
	return t, t.readAndParse()
}

func (t *Tree) readAndParse() error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan *File)
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				if err := t.readOne(f); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range t.Files {
		next <- f
	}
	close(next)
	wg.Wait()
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (t *Tree) readOne(f *File) error {
	src, err := os.ReadFile(filepath.Join(t.Root, filepath.FromSlash(f.Path)))
	if err != nil {
		return fmt.Errorf("house: %w", err)
	}
	f.Src = src
	f.Generated = bytes.Contains(src, []byte("Code generated")) && bytes.Contains(src, []byte("DO NOT EDIT"))
	if f.Test || f.Generated {
		return nil
	}
	// token.FileSet is safe for concurrent use; the parser's object
	// resolution (mode 0, as shape.sh parses) is what the layering rule reads.
	f.AST, f.ParseErr = parser.ParseFile(t.Fset, f.Path, src, 0)
	if f.ParseErr != nil {
		f.AST = nil
	}
	return nil
}

// Product is the files shape.sh measures: not tests, not generated.
func (t *Tree) Product() []*File {
	var out []*File
	for _, f := range t.Files {
		if !f.Test && !f.Generated {
			out = append(out, f)
		}
	}
	return out
}

// PackageDirs is every directory holding a Go file that is not a test,
// sorted; "." is the root package.
func (t *Tree) PackageDirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range t.Files {
		if !f.Test && !seen[f.Dir()] {
			seen[f.Dir()] = true
			out = append(out, f.Dir())
		}
	}
	sort.Strings(out)
	return out
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}
