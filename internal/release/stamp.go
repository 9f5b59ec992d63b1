package release

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// Copy copies the files git would commit from the repository at src (the
// tracked files and the untracked ones .gitignore leaves in) to dst, which
// must not exist, and makes dst a git repository with them committed: what
// a tag would publish, without the build outputs and installed npm
// packages a working tree also holds.
func Copy(src, dst string) error {
	out, err := git(src, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		from := filepath.Join(src, filepath.FromSlash(name))
		info, err := os.Lstat(from)
		if errors.Is(err, os.ErrNotExist) {
			continue // tracked, deleted in the working tree
		}
		if err != nil {
			return fmt.Errorf("release: %w", err)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("release: %s is not a regular file; a module zip holds only regular files", name)
		}
		to := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return fmt.Errorf("release: %w", err)
		}
		if err := os.WriteFile(to, b, info.Mode().Perm()|0o600); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	if _, err := git(dst, "init", "-q"); err != nil {
		return err
	}
	return commit(dst, "the tree as copied")
}

// commit commits every file under dir.
func commit(dir, msg string) error {
	if _, err := git(dir, "add", "-A", "-f", "."); err != nil {
		return err
	}
	_, err := git(dir, "-c", "user.name=agentrt release", "-c", "user.email=release@agentrt.invalid",
		"-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", msg)
	return err
}

func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("release: git %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Stamped is a tree stamped as a version, and the module proxy serving it.
type Stamped struct {
	// Workspace is the stamped tree.
	Workspace *Workspace
	// Version is the version it was stamped as.
	Version string
	// Proxy is the directory of the file-based module proxy: GOPROXY takes
	// it as file://DIR.
	Proxy string
	// Sums holds the go.sum lines of each of our modules at Version, by
	// module path: "PATH VERSION h1:…" and "PATH VERSION/go.mod h1:…".
	Sums map[string][]string
}

// StampOptions adjust Stamp.
type StampOptions struct {
	// Before, when set, runs in each module's directory after its go.mod
	// and go.sum name the modules before it at the version, and before its
	// zip is made: `make tidy` runs go mod tidy here, with the proxy built
	// so far.
	Before func(m *Module, dir string, proxy string) error
}

// Stamp stamps the git repository at root (made by Copy) as version v:
// every requirement on one of our modules names v, every go.sum holds the
// hashes of our modules at v and none other of ours, and proxy (a new
// directory) becomes a file-based module proxy serving every module at v,
// its zip made with golang.org/x/mod/zip from a commit of exactly those
// files. Modules are stamped in Order, each committed before its zip is
// made, so a zip's go.sum names the zips before it.
func Stamp(root, v, proxy string, opt StampOptions) (*Stamped, error) {
	if err := module.Check("example.com/m", v); err != nil || strings.Contains(v, "+") {
		return nil, fmt.Errorf("release: %q is not a version to stamp: want vX.Y.Z", v)
	}
	w, err := Load(root)
	if err != nil {
		return nil, err
	}
	order, err := w.Order()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(proxy, 0o755); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	ctime, err := commitTime(root)
	if err != nil {
		return nil, err
	}
	s := &Stamped{Workspace: w, Version: v, Proxy: proxy, Sums: map[string][]string{}}
	for _, m := range order {
		dir := filepath.Join(root, filepath.FromSlash(m.Dir))
		if err := s.stampModFile(m, dir); err != nil {
			return nil, err
		}
		if opt.Before != nil {
			if err := opt.Before(m, dir, proxy); err != nil {
				return nil, err
			}
		}
		if err := s.trimSums(m, dir); err != nil {
			return nil, err
		}
		if err := commit(root, "stamp "+m.Path+" as "+v); err != nil {
			return nil, err
		}
		if err := s.serve(m, root, dir, ctime); err != nil {
			return nil, err
		}
	}
	// Reload: the stamped go.mod files name v now.
	if s.Workspace, err = Load(root); err != nil {
		return nil, err
	}
	if err := StampWork(s.Workspace); err != nil {
		return nil, err
	}
	return s, nil
}

// StampWork rewrites go.work's replace directives to WantWorkReplaces,
// keeping the file as it is when they already are.
func StampWork(w *Workspace) error {
	want := w.WantWorkReplaces()
	have := slices.Clone(w.WorkReplaces)
	slices.Sort(have)
	if slices.Equal(have, want) {
		return nil
	}
	name := filepath.Join(w.Root, "go.work")
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	wf, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	// Keep each line that names a wanted module and directory, with the
	// version changed in place, so the block and its comment stay.
	type key struct{ path, dir string }
	wanted := map[key]string{}
	for _, m := range w.Modules {
		for _, other := range w.Modules {
			if v, ok := other.Requires[m.Path]; ok {
				wanted[key{m.Path, "./" + strings.TrimPrefix(m.Dir, ".")}] = v
			}
		}
	}
	for _, r := range slices.Clone(wf.Replace) {
		k := key{r.Old.Path, r.New.Path}
		v, ok := wanted[k]
		tok := r.Syntax.Token
		if i := slices.Index(tok, r.Old.Path); ok && r.Old.Version != "" && i >= 0 && i+1 < len(tok) && tok[i+1] == r.Old.Version {
			tok[i+1] = v
			r.Old.Version = v
			delete(wanted, k)
			continue
		}
		if err := wf.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	var rest []key
	for k := range wanted {
		rest = append(rest, k)
	}
	slices.SortFunc(rest, func(a, b key) int { return strings.Compare(a.path, b.path) })
	for _, k := range rest {
		if err := wf.AddReplace(k.path, wanted[k], k.dir, ""); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	wf.Cleanup()
	if err := os.WriteFile(name, modfile.Format(wf.Syntax), 0o644); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// stampModFile sets m's requirements on our modules to the version, and
// its go.sum's lines for our modules to those of the zips made so far.
func (s *Stamped) stampModFile(m *Module, dir string) error {
	name := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	for p := range m.Requires {
		if err := f.AddRequire(p, s.Version); err != nil {
			return fmt.Errorf("release: %s: %w", name, err)
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return fmt.Errorf("release: %s: %w", name, err)
	}
	if err := os.WriteFile(name, out, 0o644); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	var ours []string
	for _, p := range s.Workspace.Closure(m) {
		lines, ok := s.Sums[p]
		if !ok {
			return fmt.Errorf("release: %s requires %s, which has no zip yet", m.Path, p)
		}
		ours = append(ours, lines...)
	}
	return ReplaceSums(filepath.Join(dir, "go.sum"), s.Workspace.ModulePathPrefix(), ours)
}

// trimSums leaves in m's go.sum exactly the lines of ours that go mod tidy
// keeps: stampModFile wrote every module of ours m requires directly or
// through another, and a pruned module graph needs fewer. Only our lines
// are taken from tidy's diff; any other difference is left for the tidy
// check to report.
func (s *Stamped) trimSums(m *Module, dir string) error {
	if len(m.Requires) == 0 {
		return nil
	}
	prefix := s.Workspace.ModulePathPrefix()
	modcache, err := ReleaseModCache(prefix)
	if err != nil {
		return err
	}
	env, err := GoEnv(os.Environ(), s.Proxy, prefix, modcache)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, WithoutModIndex(env), &stdout, &stderr
	if err := cmd.Run(); err != nil && stdout.Len() == 0 {
		return fmt.Errorf("release: go mod tidy -diff in %s: %v: %s", m.Dir, err, strings.TrimSpace(stderr.String()))
	}
	name := filepath.Join(dir, "go.sum")
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release: %w", err)
	}
	keep := map[string]bool{}
	for _, l := range OurSums(data, prefix) {
		keep[l] = true
	}
	inSum := false
	for _, l := range strings.Split(stdout.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
			inSum = strings.HasSuffix(strings.TrimSpace(l), "go.sum")
		case inSum && strings.HasPrefix(l, "-") && len(OurSums([]byte(l[1:]), prefix)) == 1:
			delete(keep, strings.TrimSpace(l[1:]))
		case inSum && strings.HasPrefix(l, "+") && len(OurSums([]byte(l[1:]), prefix)) == 1:
			keep[strings.TrimSpace(l[1:])] = true
		}
	}
	lines := make([]string, 0, len(keep))
	for l := range keep {
		lines = append(lines, l)
	}
	return ReplaceSums(name, prefix, lines)
}

// serve writes m's zip, .mod, .info and list into the proxy from the last
// commit, and records its go.sum lines.
func (s *Stamped) serve(m *Module, root, dir string, ctime time.Time) error {
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	at := filepath.Join(s.Proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	mv := module.Version{Path: m.Path, Version: s.Version}
	zipName := filepath.Join(at, s.Version+".zip")
	zf, err := os.Create(zipName)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	subdir := ""
	if m.Dir != "." {
		subdir = m.Dir
	}
	if err := zip.CreateFromVCS(zf, mv, root, "HEAD", subdir); err != nil {
		zf.Close()
		return fmt.Errorf("release: zipping %s: %w", m.Path, err)
	}
	if err := zf.Close(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{s.Version, ctime})
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{s.Version + ".mod", gomod},
		{s.Version + ".info", info},
		{"list", []byte(s.Version + "\n")},
	} {
		if err := os.WriteFile(filepath.Join(at, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	zh, err := dirhash.HashZip(zipName, dirhash.Hash1)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.Sums[m.Path] = []string{
		fmt.Sprintf("%s %s %s", m.Path, s.Version, zh),
		fmt.Sprintf("%s %s/go.mod %s", m.Path, s.Version, mh),
	}
	return nil
}

// commitTime is the time of the last commit at root, for the .info files.
func commitTime(root string) (time.Time, error) {
	out, err := git(root, "log", "-1", "--format=%cI")
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	if err != nil {
		return time.Time{}, fmt.Errorf("release: the last commit's time: %w", err)
	}
	return t.UTC(), nil
}

// ReplaceSums rewrites the go.sum file name: it drops every line for a
// module whose path is prefix or under it, adds lines, and sorts as the go
// command does (by module path, then version, "/go.mod" after the version
// it belongs to). A go.sum that would be empty is removed.
func ReplaceSums(name, prefix string, lines []string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release: %w", err)
	}
	if len(lines) == 0 && len(OurSums(data, prefix)) == 0 {
		return nil // nothing of ours in it before or after: leave it as it is
	}
	keep := OtherSums(data, prefix)
	all := append(keep, lines...)
	type entry struct {
		mv   module.Version
		hash string
	}
	var es []entry
	seen := map[string]bool{}
	for _, l := range all {
		f := strings.Fields(l)
		if len(f) != 3 {
			return fmt.Errorf("release: %s: malformed line %q", name, l)
		}
		if seen[l] {
			continue
		}
		seen[l] = true
		es = append(es, entry{module.Version{Path: f[0], Version: f[1]}, f[2]})
	}
	mvs := make([]module.Version, 0, len(es))
	hashes := map[module.Version][]string{}
	for _, e := range es {
		if _, ok := hashes[e.mv]; !ok {
			mvs = append(mvs, e.mv)
		}
		hashes[e.mv] = append(hashes[e.mv], e.hash)
	}
	module.Sort(mvs)
	var buf bytes.Buffer
	for _, mv := range mvs {
		hs := hashes[mv]
		slices.Sort(hs)
		for _, h := range hs {
			fmt.Fprintf(&buf, "%s %s %s\n", mv.Path, mv.Version, h)
		}
	}
	if buf.Len() == 0 {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("release: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// OtherSums returns the lines of a go.sum that are not about a module at
// or under prefix.
func OtherSums(data []byte, prefix string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		if ours(strings.Fields(l)[0], prefix) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// OurSums returns the lines of a go.sum that are about a module at or
// under prefix.
func OurSums(data []byte, prefix string) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && ours(strings.Fields(l)[0], prefix) {
			out = append(out, l)
		}
	}
	return out
}

func ours(modPath, prefix string) bool {
	return prefix != "" && (modPath == prefix || strings.HasPrefix(modPath, prefix+"/"))
}
