package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// root is the repository root: this module sits at internal/release.
const root = "../.."

func workspace(t *testing.T) *Workspace {
	t.Helper()
	w, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var (
	stampOnce sync.Once
	stamped   *Stamped
	stampErr  error
	stampDir  string
)

// stampedTree is a copy of the checkout stamped as the version our modules
// require each other at, with its module proxy; made once per test binary.
func stampedTree(t *testing.T) *Stamped {
	t.Helper()
	stampOnce.Do(func() {
		w, err := Load(root)
		if err != nil {
			stampErr = err
			return
		}
		v, err := w.Version()
		if err != nil {
			stampErr = err
			return
		}
		if stampDir, err = os.MkdirTemp("", "agentrt-release-test-"); err != nil {
			stampErr = err
			return
		}
		if err := Copy(w.Root, filepath.Join(stampDir, "src")); err != nil {
			stampErr = err
			return
		}
		stamped, stampErr = Stamp(filepath.Join(stampDir, "src"), v, filepath.Join(stampDir, "proxy"), StampOptions{})
	})
	if stampErr != nil {
		t.Fatal(stampErr)
	}
	return stamped
}

func TestMain(m *testing.M) {
	code := m.Run()
	if stampDir != "" {
		RemoveAll(stampDir)
	}
	os.Exit(code)
}

// goCmd runs the go command in dir with env and returns its standard
// output, failing the test with both outputs when it fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}

// A published go.mod has no replace and no exclude directive (go install
// pkg@version refuses either), and our modules require each other at one
// release version, never at a pseudo-version: go.work alone points them at
// the checkout.
func TestRelease_NoReplaceDirectiveInAPublishedModule(t *testing.T) {
	w := workspace(t)
	published := 0
	for _, m := range w.Modules {
		if !m.Published() {
			continue
		}
		published++
		if m.Replaces > 0 {
			t.Errorf("%s/go.mod has %d replace directive(s): go install %s/...@version refuses it; go.work ties the checkout", m.Dir, m.Replaces, m.Path)
		}
		if m.Excludes > 0 {
			t.Errorf("%s/go.mod has %d exclude directive(s): go install refuses it", m.Dir, m.Excludes)
		}
	}
	if published < 2 {
		t.Fatalf("found %d published modules in go.work: want the core and its nested modules", published)
	}
	if _, err := w.Version(); err != nil {
		t.Error(err)
	}
	if _, err := w.Order(); err != nil {
		t.Error(err)
	}
	// go.work replaces exactly the versions our modules require of each
	// other, each with its own directory, and nothing else.
	have := slices.Clone(w.WorkReplaces)
	slices.Sort(have)
	if want := w.WantWorkReplaces(); !slices.Equal(have, want) {
		t.Errorf("go.work replaces\n  %s\nwant\n  %s", strings.Join(have, "\n  "), strings.Join(want, "\n  "))
	}
}

// Every module in go.work, stamped as the version our modules require each
// other at (as scripts/release.sh would stamp it), is tidy and builds and
// vets outside the workspace: GOWORK=off, our modules from the local file
// proxy, every other module through the ordinary proxy and checked against
// the checksum database.
func TestRelease_EveryModuleBuildsOutsideTheWorkspace(t *testing.T) {
	t.Parallel() // with the go install test: one mostly compiles, the other mostly downloads
	s := stampedTree(t)
	prefix := s.Workspace.ModulePathPrefix()
	modcache, err := ReleaseModCache(prefix)
	if err != nil {
		t.Fatal(err)
	}
	env, err := GoEnv(os.Environ(), s.Proxy, prefix, modcache, "-trimpath")
	if err != nil {
		t.Fatal(err)
	}
	env = append(WithoutModIndex(env), "CGO_ENABLED=0")
	for _, m := range s.Workspace.Modules {
		t.Run(strings.ReplaceAll(m.Dir, "/", "_"), func(t *testing.T) {
			dir := filepath.Join(s.Workspace.Root, filepath.FromSlash(m.Dir))
			if out := goCmd(t, dir, env, "mod", "tidy", "-diff"); strings.TrimSpace(out) != "" {
				t.Fatalf("%s is not tidy outside the workspace:\n%s", m.Dir, out)
			}
			// -o /dev/null: a module whose ./... is one main package (cmd)
			// would otherwise write the binary over its own directory.
			goCmd(t, dir, env, "build", "-o", os.DevNull, "./...")
			goCmd(t, dir, env, "vet", "./...")
			// Nothing above may have changed the stamped go.mod or go.sum.
			if out, err := git(s.Workspace.Root, "status", "--porcelain", "--", m.Dir); err != nil || len(out) > 0 {
				t.Fatalf("building %s changed the tree: %s %v", m.Dir, out, err)
			}
		})
	}
}

// In an empty GOPATH and module cache, `go install PKG@VERSION` of every
// command of every published module works with our modules fetched from the
// local file proxy and every other module through the ordinary proxy, and
// each installed binary prints that version.
func TestRelease_GoInstallFromALocalProxyInstallsEveryBinary(t *testing.T) {
	t.Parallel()
	s := stampedTree(t)
	prefix := s.Workspace.ModulePathPrefix()
	bins, err := s.Workspace.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	if len(bins) == 0 {
		t.Fatal("no command under any published module's cmd/: the walk is broken")
	}
	gopath := t.TempDir()
	t.Cleanup(func() { RemoveAll(gopath) })
	modcache := filepath.Join(gopath, "pkg", "mod")
	env, err := GoEnv(os.Environ(), s.Proxy, prefix, modcache, "-mod=mod", "-trimpath")
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "GOPATH="+gopath, "CGO_ENABLED=0")
	away := t.TempDir() // outside any module
	byModule := map[*Module][]Binary{}
	var mods []*Module
	for _, b := range bins {
		if _, ok := byModule[b.Module]; !ok {
			mods = append(mods, b.Module)
		}
		byModule[b.Module] = append(byModule[b.Module], b)
	}
	for _, m := range mods {
		gobin := filepath.Join(gopath, "bin-"+strings.ReplaceAll(m.Dir, "/", "_"))
		args := []string{"install"}
		for _, b := range byModule[m] {
			args = append(args, b.Package+"@"+s.Version)
		}
		goCmd(t, away, append(slices.Clone(env), "GOBIN="+gobin), args...)
		for _, b := range byModule[m] {
			exe := filepath.Join(gobin, b.Name)
			if runtime.GOOS == "windows" {
				exe += ".exe"
			}
			out, err := exec.Command(exe, "version").Output()
			if err != nil {
				t.Errorf("%s version: %v", b.Package, err)
				continue
			}
			if want := b.Name + " " + s.Version + " ("; !strings.HasPrefix(string(out), want) {
				t.Errorf("%s@%s version printed %q, want it to begin %q", b.Package, s.Version, out, want)
			}
		}
	}
	// Our modules came from the local proxy: the module cache holds the
	// zips the proxy served, by their hashes.
	for _, m := range s.Workspace.Modules {
		zh, err := os.ReadFile(filepath.Join(modcache, "cache", "download", filepath.FromSlash(m.Path), "@v", s.Version+".ziphash"))
		if os.IsNotExist(err) {
			continue // a module no binary needs
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Fields(s.Sums[m.Path][0])[2]; strings.TrimSpace(string(zh)) != want {
			t.Errorf("%s@%s in the module cache has hash %s, not the local proxy's %s", m.Path, s.Version, zh, want)
		}
	}
	if _, err := os.Stat(filepath.Join(modcache, "cache", "download", filepath.FromSlash(prefix), "@v", s.Version+".ziphash")); err != nil {
		t.Errorf("the core was not fetched into the empty module cache: %v", err)
	}
}

// make release's script builds every binary a release holds (at least
// agentrt, agentrt-proxy, agentrt-console, agentrt-policy and agentrt-otel),
// writes SHA256SUMS over exactly those, and each binary prints the version
// it was stamped with.
func TestRelease_EveryBinaryPrintsItsVersion(t *testing.T) {
	w := workspace(t)
	bins, err := w.ReleaseBinaries()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bins {
		names = append(names, b.Name)
	}
	for _, want := range []string{"agentrt", "agentrt-proxy", "agentrt-console", "agentrt-policy", "agentrt-otel"} {
		if !slices.Contains(names, want) {
			t.Errorf("a release holds %q, not %s", names, want)
		}
	}
	out := t.TempDir()
	const stamp = "v0.0.0-versiontest"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("bash", ".ci/release", out, platform)
	cmd.Dir = w.Root
	cmd.Env = append(os.Environ(), "VERSION="+stamp)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf(".ci/release: %v\n%s", err, b)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			listed = append(listed, f[1])
		}
	}
	var want []string
	for _, b := range bins {
		want = append(want, fmt.Sprintf("%s-%s-%s", b.Name, runtime.GOOS, runtime.GOARCH))
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("SHA256SUMS lists %q, want %q", listed, want)
	}
	for _, b := range bins {
		exe := filepath.Join(out, fmt.Sprintf("%s-%s-%s", b.Name, runtime.GOOS, runtime.GOARCH))
		got, err := exec.Command(exe, "version").Output()
		if err != nil {
			t.Errorf("%s version: %v", exe, err)
			continue
		}
		if want := b.Name + " " + stamp + " ("; !strings.HasPrefix(string(got), want) {
			t.Errorf("%s version printed %q, want it to begin %q", b.Name, got, want)
		}
	}
}

// The README gives one go install line per binary a release holds, each at
// the version our modules require each other at, and no other.
func TestRelease_ReadmeGivesOneInstallLinePerBinary(t *testing.T) {
	w := workspace(t)
	v, err := w.Version()
	if err != nil {
		t.Fatal(err)
	}
	bins, err := w.ReleaseBinaries()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, l := range InstallLines(readme, w.ModulePathPrefix()) {
		got = append(got, l[0]+"@"+l[1])
	}
	for _, b := range bins {
		want = append(want, b.Package+"@"+v)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("README.md installs\n  %s\nwant one line per binary of a release:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// The README names the Go release a user needs, and it is the go line of
// go.work and of every go.mod; it names the toolchain line too.
func TestRelease_ReadmeStatesTheGoVersionOfTheGoLines(t *testing.T) {
	w := workspace(t)
	goLines := map[string][]string{}
	toolchains := map[string][]string{}
	files := []string{"go.work"}
	for _, m := range w.Modules {
		files = append(files, filepath.ToSlash(filepath.Join(m.Dir, "go.mod")))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		g := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(b)
		tc := regexp.MustCompile(`(?m)^toolchain (\S+)$`).FindSubmatch(b)
		if g == nil || tc == nil {
			t.Fatalf("%s: want a go line and a toolchain line", f)
		}
		goLines[string(g[1])] = append(goLines[string(g[1])], f)
		toolchains[string(tc[1])] = append(toolchains[string(tc[1])], f)
	}
	if len(goLines) != 1 || len(toolchains) != 1 {
		t.Fatalf("the go lines (%v) and toolchain lines (%v) must each name one release", goLines, toolchains)
	}
	var goV, tcV string
	for k := range goLines {
		goV = k
	}
	for k := range toolchains {
		tcV = k
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`You need Go (\S+) or later`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md does not say "You need Go X or later"`)
	}
	if string(m[1]) != goV {
		t.Errorf("README.md says Go %s or later; the go lines say %s", m[1], goV)
	}
	if !bytes.Contains(readme, []byte("`toolchain "+tcV+"`")) {
		t.Errorf("README.md does not name the toolchain line `toolchain %s`", tcV)
	}
}

// scripts/release.sh, on a clean copy of the checkout, sets every
// requirement on our modules, go.work's replace lines and the README's
// install lines to the new version, writes our modules' hashes at that
// version into every go.sum that needs them, and prints one tag per
// published module. It refuses a version that is not vX.Y.Z and a checkout
// with uncommitted changes, and changes nothing when it refuses.
func TestRelease_ScriptStampsEveryModuleAndPrintsTheTags(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "src")
	if err := Copy(root, tree); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveAll(tree) })
	script := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"scripts/release.sh"}, args...)...)
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "RELEASE_NO_PROVE=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, bad := range []string{"v1.2", "1.2.3", "v1.2.3-rc1", "latest", "v0.0.1"} {
		out, err := script(bad)
		if err == nil {
			t.Errorf("release.sh %s succeeded:\n%s", bad, out)
		}
		if st, _ := git(tree, "status", "--porcelain"); len(st) > 0 {
			t.Fatalf("release.sh %s refused but changed the tree:\n%s", bad, st)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "uncommitted.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := script("v0.2.0"); err == nil || !strings.Contains(out, "uncommitted changes") {
		t.Errorf("release.sh on a dirty checkout: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(tree, "uncommitted.txt")); err != nil {
		t.Fatal(err)
	}

	const v = "v0.2.0"
	out, err := script(v)
	if err != nil {
		t.Fatalf("release.sh %s: %v\n%s", v, err, out)
	}
	w, err := Load(tree)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.Version(); err != nil || got != v {
		t.Errorf("after release.sh %s the modules require each other at %q (%v)", v, got, err)
	}
	have := slices.Clone(w.WorkReplaces)
	slices.Sort(have)
	if want := w.WantWorkReplaces(); !slices.Equal(have, want) {
		t.Errorf("go.work replaces %q, want %q", have, want)
	}
	for _, m := range w.Modules {
		sum, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(m.Dir), "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var got []string
		for _, l := range OurSums(sum, w.ModulePathPrefix()) {
			f := strings.Fields(l)
			if f[1] != v && f[1] != v+"/go.mod" {
				t.Errorf("%s/go.sum still names %s", m.Dir, l)
			}
			got = append(got, f[0]+" "+f[1])
		}
		// Both lines for every module of ours m requires directly, and
		// none for one it does not reach (go mod tidy may prune others;
		// the build test holds the go.sum files to go mod tidy -diff).
		closure := w.Closure(m)
		for dep := range m.Requires {
			for _, l := range []string{dep + " " + v, dep + " " + v + "/go.mod"} {
				if !slices.Contains(got, l) {
					t.Errorf("%s/go.sum lacks %s", m.Dir, l)
				}
			}
		}
		for _, l := range got {
			if !slices.Contains(closure, strings.Fields(l)[0]) {
				t.Errorf("%s/go.sum names %s, which %s does not require", m.Dir, l, m.Dir)
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(tree, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := InstallLines(readme, w.ModulePathPrefix())
	if len(lines) == 0 {
		t.Error("README.md has no install line after the release script")
	}
	for _, l := range lines {
		if l[1] != v {
			t.Errorf("README.md installs %s@%s, want @%s", l[0], l[1], v)
		}
	}
	tags := out[strings.LastIndex(out, "== tags\n")+len("== tags\n"):]
	var want []string
	for _, m := range w.Modules {
		if m.Published() {
			want = append(want, m.Tag(v))
		}
	}
	if got := strings.Fields(tags); !slices.Equal(got, want) || !slices.Contains(got, "v0.2.0") || !slices.Contains(got, "proxy/v0.2.0") {
		t.Errorf("release.sh printed the tags %q, want %q", got, want)
	}
}

// Purging a module cache of our modules removes the core's extracted
// directory, every nested module's and the downloads, and nothing else: a
// stale core left behind would be built in place of the checkout's.
func TestRelease_PurgeRemovesEveryVersionOfOurModules(t *testing.T) {
	dir := t.TempDir()
	const prefix = "github.com/agentrt/agentrt"
	gone := []string{
		"github.com/agentrt/agentrt@v0.1.0/go.mod",
		"github.com/agentrt/agentrt/mcp@v0.1.0/go.mod",
		"cache/download/github.com/agentrt/agentrt/@v/v0.1.0.zip",
		"cache/download/github.com/agentrt/agentrt/proxy/@v/v0.1.0.mod",
	}
	kept := []string{
		"github.com/agentrt/other@v1.0.0/go.mod",
		"github.com/agentrt/agentrtx@v1.0.0/go.mod",
		"cache/download/github.com/agentrt/other/@v/v1.0.0.zip",
		"golang.org/x/mod@v0.43.0/go.mod",
	}
	for _, f := range append(slices.Clone(gone), kept...) {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(p), 0o555); err != nil { // as the module cache leaves it
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { RemoveAll(dir) })
	if err := PurgeOurs(dir, prefix); err != nil {
		t.Fatal(err)
	}
	for _, f := range gone {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); !os.IsNotExist(err) {
			t.Errorf("%s survived the purge (%v)", f, err)
		}
	}
	for _, f := range kept {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
			t.Errorf("the purge removed %s: %v", f, err)
		}
	}
}

// A module cache kept between runs (ReleaseModCache) builds our modules as
// the checkout has them now, even when a file was added under the same
// version since the last run: the purge removes the old extraction, and
// WithoutModIndex keeps the go command from reusing the old file list.
func TestRelease_AKeptModuleCacheBuildsTheTreeAsItIsNow(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.26.0\n\nuse (\n\t.\n\t./nested\n)\n\nreplace example.com/core v0.1.0 => ./\n")
	write("go.mod", "module example.com/core\n\ngo 1.26.0\n")
	write("one.go", "package core\n\nfunc One() int { return 1 }\n")
	write("nested/go.mod", "module example.com/core/nested\n\ngo 1.26.0\n\nrequire example.com/core v0.1.0\n")
	write("nested/nested.go", "package nested\n\nimport \"example.com/core\"\n\nvar N = core.One()\n")
	if _, err := git(filepath.Dir(src), "init", "-q", "src"); err != nil {
		t.Fatal(err)
	}
	if err := commit(src, "first"); err != nil {
		t.Fatal(err)
	}
	modcache := filepath.Join(t.TempDir(), "modcache")
	t.Cleanup(func() { RemoveAll(modcache) })
	build := func(run string) {
		t.Helper()
		tree := filepath.Join(t.TempDir(), "tree")
		if err := Copy(src, tree); err != nil {
			t.Fatal(err)
		}
		s, err := Stamp(tree, "v0.1.0", filepath.Join(t.TempDir(), "proxy"), StampOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := PurgeOurs(modcache, "example.com/core"); err != nil {
			t.Fatal(err)
		}
		env, err := GoEnv(os.Environ(), s.Proxy, "example.com/core", modcache)
		if err != nil {
			t.Fatal(err)
		}
		goCmd(t, filepath.Join(tree, "nested"), WithoutModIndex(env), "build", "./...")
		t.Logf("%s: built", run)
	}
	build("first")
	// The core gains a file under the same version, and nested uses it.
	write("two.go", "package core\n\nfunc Two() int { return 2 }\n")
	write("nested/nested.go", "package nested\n\nimport \"example.com/core\"\n\nvar N = core.One() + core.Two()\n")
	if err := commit(src, "second"); err != nil {
		t.Fatal(err)
	}
	build("second")
}
