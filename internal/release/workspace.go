package release

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// Module is one module go.work uses.
type Module struct {
	// Path is the module path, e.g. github.com/agentrt/agentrt/proxy.
	Path string
	// Dir is the module's directory relative to the workspace root, in
	// slash form: "." for the core, "proxy" for the proxy.
	Dir string
	// Requires maps each of our modules this one requires to the version
	// its go.mod names.
	Requires map[string]string
	// Replaces and Excludes count the go.mod's replace and exclude
	// directives: `go install pkg@version` refuses a module with either.
	Replaces, Excludes int
}

// Published reports whether users fetch the module: every module but those
// under an internal/ directory, which nobody outside can import.
func (m *Module) Published() bool {
	return !slices.Contains(strings.Split(m.Dir, "/"), "internal")
}

// Tag is the git tag that publishes the module at version v: v itself for
// the module at the repository root, DIR/v for a nested one.
func (m *Module) Tag(v string) string {
	if m.Dir == "." {
		return v
	}
	return m.Dir + "/" + v
}

// Binary is one command under a published module's cmd/ directory.
type Binary struct {
	// Name is the program's name: its directory under cmd/.
	Name string
	// Module is the module that holds it.
	Module *Module
	// Package is its import path, what `go install` takes.
	Package string
	// Dir is its directory relative to the workspace root.
	Dir string
}

// Workspace is the repository as go.work ties it.
type Workspace struct {
	// Root is the directory holding go.work.
	Root string
	// Modules are the modules go.work uses, in its order.
	Modules []*Module
	// WorkReplaces are go.work's replace directives, "OLD VERSION => NEW".
	WorkReplaces []string
}

// ErrNotLockstep is returned when our modules' requirements on each other
// do not all name one version.
var ErrNotLockstep = errors.New("release: the modules do not require each other at one version")

// Load reads go.work under root and the go.mod of every module it uses.
func Load(root string) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(abs, "go.work"))
	if err != nil {
		return nil, fmt.Errorf("release: reading the workspace: %w", err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	w := &Workspace{Root: abs}
	for _, r := range wf.Replace {
		w.WorkReplaces = append(w.WorkReplaces, replaceString(r.Old.Path, r.Old.Version, r.New.Path))
	}
	type parsed struct {
		m *Module
		f *modfile.File
	}
	var all []parsed
	for _, u := range wf.Use {
		dir := path.Clean(filepath.ToSlash(u.Path))
		if dir == ".." || strings.HasPrefix(dir, "../") || path.IsAbs(dir) {
			return nil, fmt.Errorf("release: go.work uses %s, outside the repository", u.Path)
		}
		name := filepath.Join(abs, filepath.FromSlash(dir), "go.mod")
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
		f, err := modfile.Parse(name, b, nil)
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
		if f.Module == nil {
			return nil, fmt.Errorf("release: %s names no module", name)
		}
		m := &Module{Path: f.Module.Mod.Path, Dir: dir, Requires: map[string]string{},
			Replaces: len(f.Replace), Excludes: len(f.Exclude)}
		w.Modules = append(w.Modules, m)
		all = append(all, parsed{m, f})
	}
	for _, p := range all {
		for _, r := range p.f.Require {
			if w.Module(r.Mod.Path) != nil {
				p.m.Requires[r.Mod.Path] = r.Mod.Version
			}
		}
	}
	return w, nil
}

func replaceString(old, oldV, new string) string {
	return strings.TrimSpace(old+" "+oldV) + " => " + new
}

// WantWorkReplaces returns the replace directives go.work must hold: one for
// each of our modules another requires, pointing the version required at
// its directory. A workspace module stands for every version of itself in
// the build, but the go command still reads the go.mod of each version the
// go.mod files require, and no proxy serves one before it is tagged.
func (w *Workspace) WantWorkReplaces() []string {
	var out []string
	for _, m := range w.Modules {
		seen := map[string]bool{}
		for _, other := range w.Modules {
			if v, ok := other.Requires[m.Path]; ok && !seen[v] {
				seen[v] = true
				out = append(out, replaceString(m.Path, v, "./"+strings.TrimPrefix(m.Dir, ".")))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Module returns the workspace's module with the given path, or nil.
func (w *Workspace) Module(modPath string) *Module {
	for _, m := range w.Modules {
		if m.Path == modPath {
			return m
		}
	}
	return nil
}

// Core is the module at the root of the repository.
func (w *Workspace) Core() *Module {
	for _, m := range w.Modules {
		if m.Dir == "." {
			return m
		}
	}
	return nil
}

// ModulePathPrefix is the module path of the core: every module of ours
// has it as a prefix, so it is what GONOSUMDB names.
func (w *Workspace) ModulePathPrefix() string {
	if c := w.Core(); c != nil {
		return c.Path
	}
	return ""
}

// Version is the one version every requirement of one of our modules on
// another names: the release being prepared, or the last one cut.
func (w *Workspace) Version() (string, error) {
	seen := map[string][]string{}
	for _, m := range w.Modules {
		for dep, v := range m.Requires {
			seen[v] = append(seen[v], m.Dir+" requires "+dep+" "+v)
		}
	}
	if len(seen) == 1 {
		for v := range seen {
			if !semver.IsValid(v) || semver.Prerelease(v) != "" || semver.Build(v) != "" || semver.Canonical(v) != v {
				return "", fmt.Errorf("%w: they name %s, not a release version vX.Y.Z", ErrNotLockstep, v)
			}
			return v, nil
		}
	}
	if len(seen) == 0 {
		return "", fmt.Errorf("%w: no module requires another", ErrNotLockstep)
	}
	var lines []string
	for _, l := range seen {
		lines = append(lines, l...)
	}
	sort.Strings(lines)
	return "", fmt.Errorf("%w: %s", ErrNotLockstep, strings.Join(lines, "; "))
}

// Order returns the modules so that each comes after every module of ours
// it requires: the order their zips must be made in, since a module's zip
// holds its go.sum and so the hashes of the zips before it.
func (w *Workspace) Order() ([]*Module, error) {
	var out []*Module
	state := map[*Module]int{} // 1 visiting, 2 done
	var visit func(m *Module, chain []string) error
	visit = func(m *Module, chain []string) error {
		switch state[m] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("release: the modules require each other in a cycle: %s", strings.Join(append(chain, m.Path), " -> "))
		}
		state[m] = 1
		deps := make([]string, 0, len(m.Requires))
		for p := range m.Requires {
			deps = append(deps, p)
		}
		sort.Strings(deps)
		for _, p := range deps {
			if err := visit(w.Module(p), append(chain, m.Path)); err != nil {
				return err
			}
		}
		state[m] = 2
		out = append(out, m)
		return nil
	}
	for _, m := range w.Modules {
		if err := visit(m, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Closure returns the paths of our modules m requires, directly or through
// another of ours, sorted.
func (w *Workspace) Closure(m *Module) []string {
	seen := map[string]bool{}
	var walk func(*Module)
	walk = func(m *Module) {
		for p := range m.Requires {
			if !seen[p] {
				seen[p] = true
				walk(w.Module(p))
			}
		}
	}
	walk(m)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Binaries returns every command of every published module: each directory
// .../cmd/NAME of the module (a module may itself be the cmd directory)
// holding a non-test Go file of package main, in module order.
func (w *Workspace) Binaries() ([]Binary, error) {
	nested := map[string]bool{}
	for _, m := range w.Modules {
		nested[m.Dir] = true
	}
	var out []Binary
	for _, m := range w.Modules {
		if !m.Published() {
			continue
		}
		modRoot := filepath.Join(w.Root, filepath.FromSlash(m.Dir))
		err := filepath.WalkDir(modRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(modRoot, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			name := d.Name()
			if rel != "." && (nested[path.Join(m.Dir, rel)] || name == "testdata" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			parent := path.Base(path.Dir(path.Join(m.Dir, rel)))
			if rel == "." || parent != "cmd" {
				return nil
			}
			ok, err := isMain(p)
			if err != nil || !ok {
				return err
			}
			out = append(out, Binary{Name: name, Module: m, Package: m.Path + "/" + rel, Dir: path.Join(m.Dir, rel)})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
	}
	return out, nil
}

// isMain reports whether dir holds a non-test Go file of package main.
func isMain(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "package main" || strings.HasPrefix(line, "package main ") {
				return true, nil
			}
		}
	}
	return false, nil
}

// ReleaseBinaries returns the binaries a release holds: every command
// Binaries finds, which must have one name each, since a release names its
// files NAME-GOOS-GOARCH.
func (w *Workspace) ReleaseBinaries() ([]Binary, error) {
	all, err := w.Binaries()
	if err != nil {
		return nil, err
	}
	byName := map[string][]string{}
	for _, b := range all {
		byName[b.Name] = append(byName[b.Name], b.Dir)
	}
	for n, dirs := range byName {
		if len(dirs) > 1 {
			return nil, fmt.Errorf("release: %d commands are named %s (%s): a release holds one", len(dirs), n, strings.Join(dirs, ", "))
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

// Tags returns the tags that publish version v: one per published module.
func (w *Workspace) Tags(v string) []string {
	var out []string
	for _, m := range w.Modules {
		if m.Published() {
			out = append(out, m.Tag(v))
		}
	}
	return out
}
