package agentrt_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"go/version"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// workUses reads the directories go.work ties together, in order.
func workUses(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("go.work")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	inUse := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "use (":
			inUse = true
		case inUse && line == ")":
			inUse = false
		case inUse && line != "":
			dirs = append(dirs, line)
		case strings.HasPrefix(line, "use "):
			dirs = append(dirs, strings.TrimSpace(strings.TrimPrefix(line, "use ")))
		}
	}
	return dirs
}

// toolchainLine returns the argument of a go.mod or go.work file's
// toolchain directive, or "" when it has none.
func toolchainLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "toolchain" {
			return f[1]
		}
	}
	return ""
}

// pinnedToolchain is the Go release every build, test, scan and release
// binary uses: the oldest one govulncheck finds no called standard-library
// vulnerability in (SECURITY.md, "The supply chain").
const pinnedToolchain = "go1.27.3"

// Every module go.work ties, and go.work itself, names the pinned toolchain,
// so a build in the workspace and a build of one module alone (GOWORK=off)
// both run on it. A new nested module without the line fails here.
func TestSupply_EveryModuleNamesThePinnedToolchain(t *testing.T) {
	if got := toolchainLine(t, "go.work"); got != pinnedToolchain {
		t.Errorf("go.work: toolchain %q, want %q", got, pinnedToolchain)
	}
	uses := workUses(t)
	if len(uses) < 2 {
		t.Fatalf("go.work uses %q: want the core and its nested modules", uses)
	}
	for _, dir := range uses {
		mod := filepath.Join(dir, "go.mod")
		if got := toolchainLine(t, mod); got != pinnedToolchain {
			t.Errorf("%s: toolchain %q, want the line \"toolchain %s\"", mod, got, pinnedToolchain)
		}
	}
}

// The tests themselves run on the pinned toolchain or a later one: the
// Makefile and .ci/run set GOTOOLCHAIN=auto, so a machine whose own go is
// older (or whose go.env says local) still fetches and uses the pinned one.
func TestSupply_TestsRunOnThePinnedToolchainOrLater(t *testing.T) {
	if v := runtime.Version(); version.Compare(v, pinnedToolchain) < 0 {
		t.Fatalf("running on %s, older than the pinned %s: run through make, or export GOTOOLCHAIN=auto", v, pinnedToolchain)
	}
}

// npmProjects returns every directory of the repository holding a
// package.json, skipping installed dependencies.
func npmProjects(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "package.json" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no package.json found: the walk is broken, or the MCP test servers moved")
	}
	return dirs
}

// installHooks are the scripts of a package.json that npm runs by itself
// during npm install or npm ci in that directory.
var installHooks = []string{"preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare", "dependencies"}

// exactVersion is a dependency pinned to one version: no range, tag, URL,
// git reference or path.
var exactVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// packageJSONProblems says what in a package.json would let npm run
// install scripts of its own, or install anything but one exact version.
func packageJSONProblems(b []byte) []string {
	var pkg struct {
		Scripts              map[string]string `json:"scripts"`
		Dependencies         map[string]string `json:"dependencies"`
		DevDependencies      map[string]string `json:"devDependencies"`
		OptionalDependencies map[string]string `json:"optionalDependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, hook := range installHooks {
		if _, ok := pkg.Scripts[hook]; ok {
			problems = append(problems, fmt.Sprintf("scripts.%s runs on install", hook))
		}
	}
	for kind, deps := range map[string]map[string]string{
		"dependencies": pkg.Dependencies, "devDependencies": pkg.DevDependencies, "optionalDependencies": pkg.OptionalDependencies,
	} {
		for name, v := range deps {
			if !exactVersion.MatchString(v) {
				problems = append(problems, fmt.Sprintf("%s.%s is %q, not one exact version", kind, name, v))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// npmrcIgnoresScripts reports whether an .npmrc sets ignore-scripts=true,
// so that even a bare npm ci or npm install runs no dependency's scripts.
func npmrcIgnoresScripts(b []byte) bool {
	on := false
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == "ignore-scripts" {
			on = strings.TrimSpace(v) == "true"
		}
	}
	return on
}

// lockProblems says which entries of a package-lock.json could install
// something other than the bytes it pinned: an entry without a sha512
// integrity hash (a link, a git or file dependency has none), or one
// resolved from anywhere but the npm registry.
func lockProblems(b []byte) []string {
	var lock struct {
		LockfileVersion int `json:"lockfileVersion"`
		Packages        map[string]struct {
			Version   string `json:"version"`
			Resolved  string `json:"resolved"`
			Integrity string `json:"integrity"`
			Link      bool   `json:"link"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if lock.LockfileVersion < 2 {
		problems = append(problems, fmt.Sprintf("lockfileVersion %d: want 2 or 3, whose packages carry integrity", lock.LockfileVersion))
	}
	if len(lock.Packages) < 2 {
		problems = append(problems, "no locked packages")
	}
	for path, p := range lock.Packages {
		if path == "" {
			continue // the project itself
		}
		switch {
		case p.Link:
			problems = append(problems, fmt.Sprintf("%s is a link, which carries no integrity", path))
		case !strings.HasPrefix(p.Integrity, "sha512-"):
			problems = append(problems, fmt.Sprintf("%s has integrity %q, want sha512-…", path, p.Integrity))
		case p.Version == "":
			problems = append(problems, fmt.Sprintf("%s has no version", path))
		}
		if p.Resolved != "" && !strings.HasPrefix(p.Resolved, "https://registry.npmjs.org/") {
			problems = append(problems, fmt.Sprintf("%s is resolved from %q, not the npm registry", path, p.Resolved))
		}
	}
	slices.Sort(problems)
	return problems
}

// No committed npm project can run install scripts: its package.json has no
// install hook of its own and pins each dependency to one version, and an
// .npmrc beside it sets ignore-scripts, so a bare npm ci (not only make
// mcp-servers, which passes --ignore-scripts) runs no dependency's scripts.
func TestSupply_NPMProjectsRunNoInstallScripts(t *testing.T) {
	for _, dir := range npmProjects(t) {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range packageJSONProblems(b) {
			t.Errorf("%s/package.json: %s", dir, p)
		}
		rc, err := os.ReadFile(filepath.Join(dir, ".npmrc"))
		if err != nil || !npmrcIgnoresScripts(rc) {
			t.Errorf("%s: want an .npmrc beside package.json with ignore-scripts=true (%v)", dir, err)
		}
	}
}

// Every committed npm project has a lock file, and every package in it is
// pinned by a sha512 integrity hash and comes from the npm registry.
func TestSupply_NPMLockEntriesCarryIntegrity(t *testing.T) {
	for _, dir := range npmProjects(t) {
		b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
		if err != nil {
			t.Errorf("%s: no lock file: %v", dir, err)
			continue
		}
		for _, p := range lockProblems(b) {
			t.Errorf("%s/package-lock.json: %s", dir, p)
		}
	}
}

// The npm checks refuse each thing they look for, so the two tests above
// cannot pass by checking nothing.
func TestSupply_NPMChecksRefuseWhatTheyLookFor(t *testing.T) {
	good := `{"dependencies":{"a":"1.2.3","@s/b":"2026.8.31"},"scripts":{"test":"node t.js"}}`
	if p := packageJSONProblems([]byte(good)); len(p) != 0 {
		t.Errorf("a clean package.json: %q", p)
	}
	for _, bad := range []string{
		`{"scripts":{"postinstall":"node evil.js"}}`,
		`{"scripts":{"prepare":"node evil.js"}}`,
		`{"dependencies":{"a":"^1.2.3"}}`,
		`{"devDependencies":{"a":"latest"}}`,
		`{"optionalDependencies":{"a":"github:x/a"}}`,
		`{"dependencies":{"a":"file:../a"}}`,
	} {
		if len(packageJSONProblems([]byte(bad))) == 0 {
			t.Errorf("packageJSONProblems passes %s", bad)
		}
	}
	if !npmrcIgnoresScripts([]byte("# c\nignore-scripts = true\n")) {
		t.Error("ignore-scripts = true not seen")
	}
	for _, bad := range []string{"", "ignore-scripts=false\n", "ignore-scripts=true\nignore-scripts=false\n", "; ignore-scripts=true\n"} {
		if npmrcIgnoresScripts([]byte(bad)) {
			t.Errorf("npmrcIgnoresScripts passes %q", bad)
		}
	}
	const entry = `"node_modules/a":{"version":"1.0.0","integrity":"sha512-AAAA"}`
	if p := lockProblems([]byte(`{"lockfileVersion":3,"packages":{"":{},` + entry + `}}`)); len(p) != 0 {
		t.Errorf("a clean lock: %q", p)
	}
	for _, bad := range []string{
		`{"lockfileVersion":1,"packages":{"":{},` + entry + `}}`,
		`{"lockfileVersion":3,"packages":{"":{}}}`,
		`{"lockfileVersion":3,"packages":{"":{},"node_modules/a":{"version":"1.0.0"}}}`,
		`{"lockfileVersion":3,"packages":{"":{},"node_modules/a":{"version":"1.0.0","integrity":"sha1-AAAA"}}}`,
		`{"lockfileVersion":3,"packages":{"":{},"node_modules/a":{"resolved":"../a","link":true}}}`,
		`{"lockfileVersion":3,"packages":{"":{},"node_modules/a":{"version":"1.0.0","integrity":"sha512-AAAA","resolved":"git+ssh://git@example.com/a.git"}}}`,
	} {
		if len(lockProblems([]byte(bad))) == 0 {
			t.Errorf("lockProblems passes %s", bad)
		}
	}
}

// goInstall matches a go install of a package at a version, in a script or
// a document: the package and what follows the @.
var goInstall = regexp.MustCompile(`go install\s+(?:-\S+\s+)*"?([^\s"@` + "`" + `]+)@([^\s"` + "`" + `)]+)`)

// pinnedModuleVersion is a semantic version or a pseudo-version, never a
// query such as latest, a branch or a commit prefix.
var pinnedModuleVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+incompatible)?$`)

// toolInstallProblems says which go install lines of a script or document
// name no fixed version, and which lines install npm packages other than
// from a lock file. A version in a shell variable counts when the same text
// assigns that variable a fixed version, or reads it from a .version file
// holding one.
func toolInstallProblems(text string, readFile func(string) ([]byte, error)) []string {
	var problems []string
	for _, m := range goInstall.FindAllStringSubmatch(text, -1) {
		pkg, v := m[1], m[2]
		if name, ok := strings.CutPrefix(v, "$"); ok {
			name = strings.Trim(name, "{}")
			a := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `=(\$\([^)]*\)|\S+)`).FindStringSubmatch(text)
			if a == nil {
				problems = append(problems, fmt.Sprintf("go install %s@%s: $%s is never assigned a version", pkg, v, name))
				continue
			}
			v = a[1]
			// vulndb_version=$(tr -d '[:space:]' < .ci/vulndb.version)
			if f := regexp.MustCompile(`^\$\(.*?([\w./-]+\.version)\)$`).FindStringSubmatch(v); f != nil {
				b, err := readFile(f[1])
				if err != nil {
					problems = append(problems, fmt.Sprintf("go install %s@$%s: %v", pkg, name, err))
					continue
				}
				v = strings.TrimSpace(string(b))
			}
		}
		if !pinnedModuleVersion.MatchString(v) {
			problems = append(problems, fmt.Sprintf("go install %s@%s: not a fixed version", pkg, v))
		}
	}
	for _, line := range strings.Split(text, "\n") {
		// One install may not be npm ci: the Inspector's lock names a
		// package this registry does not serve, so it is installed from its
		// lock with scripts off and nothing saved, and the Makefile refuses
		// the install if the lock changes. Any other npm install is refused.
		lockInstall := strings.Contains(line, "--ignore-scripts") && strings.Contains(line, "--no-save")
		if f := strings.Fields(line); slices.Contains(f, "npx") ||
			(!lockInstall && regexp.MustCompile(`\bnpm\s+(install|i|add|exec|x)\b`).MatchString(line)) {
			problems = append(problems, fmt.Sprintf("%q: npm packages come from a lock file with npm ci", strings.TrimSpace(line)))
		}
	}
	return problems
}

// Every tool CI or a contributor installs with go install is at a fixed
// version, and no script installs npm packages except with npm ci from a
// lock file: the scripts in .ci, the Makefile, the workflows, and the
// commands the README and CONTRIBUTING.md give.
func TestSupply_ToolInstallsArePinned(t *testing.T) {
	files := []string{"Makefile", "README.md", "CONTRIBUTING.md"}
	for _, glob := range []string{".ci/*", ".github/workflows/*"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	installs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		installs += len(goInstall.FindAllString(string(b), -1))
		for _, p := range toolInstallProblems(string(b), os.ReadFile) {
			t.Errorf("%s: %s", f, p)
		}
	}
	if installs == 0 {
		t.Fatal("found no go install at all: the pattern or the file list is broken")
	}
}

// The pin check refuses each way of installing an unpinned tool.
func TestSupply_ToolInstallCheckRefusesUnpinned(t *testing.T) {
	files := map[string]string{".ci/pinned.version": "v1.2.3\n", ".ci/unpinned.version": "latest\n"}
	readFile := func(name string) ([]byte, error) {
		if v, ok := files[name]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
	for _, ok := range []string{
		"v=$(tr -d '[:space:]' < .ci/pinned.version)\ngo install golang.org/x/vulndb/cmd/gendb@$v",
		"go install honnef.co/go/tools/cmd/staticcheck@v0.8.2   # release",
		"(`go install golang.org/x/vuln/cmd/govulncheck@v1.9.0`)",
		"v=v0.0.0-20261105234957-e22db6528018\ngo install \"golang.org/x/vulndb/cmd/gendb@$v\"",
		"tool_version=v1.7.12\nGOBIN=x go install golang.org/x/tool@${tool_version}",
		"npm ci --ignore-scripts",
		"go install ./cmd/agentrt",
	} {
		if p := toolInstallProblems(ok, readFile); len(p) != 0 {
			t.Errorf("%q: %q", ok, p)
		}
	}
	for _, bad := range []string{
		"go install golang.org/x/vuln/cmd/govulncheck@latest",
		"go install -v golang.org/x/vuln/cmd/govulncheck@master",
		"go install golang.org/x/vuln/cmd/govulncheck@$unset",
		"v=latest\ngo install golang.org/x/tool@$v",
		"v=$(cat .ci/unpinned.version)\ngo install golang.org/x/tool@$v",
		"v=$(cat .ci/missing.version)\ngo install golang.org/x/tool@$v",
		"npx @modelcontextprotocol/server-filesystem /tmp",
		"cd x && npm install left-pad",
		"npm i left-pad",
	} {
		if len(toolInstallProblems(bad, readFile)) == 0 {
			t.Errorf("toolInstallProblems passes %q", bad)
		}
	}
}

// pinnedUse is a step's action pinned to a full commit, or a local action.
var pinnedUse = regexp.MustCompile(`^(\./\S+|[\w.-]+/[\w./-]+@[0-9a-f]{40})$`)

// workflowProblems says what in a GitHub workflow could let a job write to
// the repository, leave the token in the checkout, or run an action whose
// code can change under the same reference. It reads the YAML by lines, as
// the workflows here are written: a top-level permissions block, and each
// checkout step's with block.
func workflowProblems(text string) []string {
	var problems []string
	lines := strings.Split(text, "\n")
	permIndent := -1 // the indent of the permissions block being read, or -1
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if permIndent >= 0 && trimmed != "" && !strings.HasPrefix(trimmed, "#") && indent <= permIndent {
			permIndent = -1
		}
		if v, ok := strings.CutPrefix(trimmed, "permissions:"); ok {
			permIndent = indent
			if v = strings.TrimSpace(v); v != "" && v != "{}" && v != "read-all" {
				problems = append(problems, fmt.Sprintf("line %d: permissions: %s", i+1, v))
			}
		} else if permIndent >= 0 && strings.Contains(trimmed, "write") {
			problems = append(problems, fmt.Sprintf("line %d grants write: %s", i+1, trimmed))
		}
		use, ok := strings.CutPrefix(strings.TrimPrefix(trimmed, "- "), "uses:")
		if !ok {
			continue
		}
		use = strings.TrimSpace(use)
		if c := strings.Index(use, " #"); c >= 0 {
			use = strings.TrimSpace(use[:c])
		}
		if !pinnedUse.MatchString(use) {
			problems = append(problems, fmt.Sprintf("line %d: %s is not pinned to a commit", i+1, use))
		}
		if strings.HasPrefix(use, "actions/checkout@") {
			indent := len(line) - len(strings.TrimLeft(line, " -"))
			found := false
			for _, next := range lines[i+1:] {
				t := strings.TrimSpace(next)
				if t == "" || strings.HasPrefix(t, "#") {
					continue
				}
				if len(next)-len(strings.TrimLeft(next, " ")) < indent || strings.HasPrefix(t, "- ") {
					break
				}
				if strings.ReplaceAll(t, " ", "") == "persist-credentials:false" {
					found = true
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("line %d: checkout without persist-credentials: false", i+1))
			}
		}
	}
	if !strings.Contains("\n"+text, "\npermissions:") {
		problems = append(problems, "no top-level permissions: the token gets the repository's default, which may write")
	}
	return problems
}

// Every GitHub workflow runs with a read-only token, checks out without
// persisting credentials, and pins each action by commit.
func TestSupply_WorkflowsAreLockedDown(t *testing.T) {
	files, err := filepath.Glob(".github/workflows/*.y*ml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no workflow in .github/workflows")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range workflowProblems(string(b)) {
			t.Errorf("%s: %s", f, p)
		}
	}
}

// The workflow check refuses each thing it looks for.
func TestSupply_WorkflowCheckRefusesWhatItLooksFor(t *testing.T) {
	const sha = "11bd71901bbe5b1630ceea73d27597364c9af683"
	good := "on: push\npermissions:\n  contents: read\njobs:\n  ci:\n    steps:\n" +
		"      - uses: actions/checkout@" + sha + " # v4.2.2\n        with:\n          persist-credentials: false\n" +
		"      - uses: actions/setup-go@" + sha + "\n      - run: bash .ci/run\n"
	if p := workflowProblems(good); len(p) != 0 {
		t.Fatalf("a locked-down workflow: %q", p)
	}
	for name, bad := range map[string]string{
		"no permissions": strings.Replace(good, "permissions:\n  contents: read\n", "", 1),
		"write":          strings.Replace(good, "contents: read", "contents: write", 1),
		"write-all":      strings.Replace(good, "permissions:\n  contents: read\n", "permissions: write-all\n", 1),
		"job write":      strings.Replace(good, "    steps:\n", "    permissions:\n      packages: write\n    steps:\n", 1),
		"tag":            strings.Replace(good, "actions/setup-go@"+sha, "actions/setup-go@v5", 1),
		"short sha":      strings.Replace(good, "actions/setup-go@"+sha, "actions/setup-go@"+sha[:7], 1),
		"credentials":    strings.Replace(good, "persist-credentials: false", "persist-credentials: true", 1),
		"no with":        strings.Replace(good, "        with:\n          persist-credentials: false\n", "", 1),
		"next step's with": strings.Replace(good, "        with:\n          persist-credentials: false\n      - uses: actions/setup-go@"+sha+"\n",
			"      - uses: actions/setup-go@"+sha+"\n        with:\n          persist-credentials: false\n", 1),
	} {
		if len(workflowProblems(bad)) == 0 {
			t.Errorf("%s: workflowProblems passes\n%s", name, bad)
		}
	}
}
