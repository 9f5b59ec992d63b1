package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentrt/agentrt/trace"
)

// announceStart says which server init is about to start or reach, since
// pinning one can take seconds (npx may download its package first), and
// warns when an npx entry names no exact version.
func announceStart(stdout, stderr io.Writer, label, command string, args []string) {
	if command == "" {
		fmt.Fprintf(stdout, "server %s: connecting to list its tools...\n", label)
		return
	}
	fmt.Fprintf(stdout, "server %s: starting it to list its tools...\n", label)
	for _, pkg := range unpinnedNpx(command, args) {
		fmt.Fprintf(stderr, "agentrt-proxy init: server %s runs npx with %s, which names no exact version, so each start may fetch different code than the code init pinned; name one (%s@1.2.3), or install the package and start it with node\n",
			label, trace.Sanitize(pkg), trace.Sanitize(pkg))
	}
}

// exactVersion is a version npm resolves to one release.
var exactVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$`)

// unpinnedNpx lists the registry packages an npx command line runs
// without an exact version: those -p/--package name, else the first
// argument that is not a flag. A path, URL or git spec is not a registry
// package and is left alone.
func unpinnedNpx(command string, args []string) []string {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(command)), ".cmd")
	if base != "npx" {
		return nil
	}
	var pkgs []string
	first := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if first == "" && i+1 < len(args) {
				first = args[i+1]
			}
			i = len(args)
		case (a == "-p" || a == "--package") && i+1 < len(args):
			pkgs = append(pkgs, args[i+1])
			i++
		case strings.HasPrefix(a, "--package="):
			pkgs = append(pkgs, strings.TrimPrefix(a, "--package="))
		case strings.HasPrefix(a, "-"):
		case first == "":
			first = a
			i = len(args) // the rest is the package's own arguments
		}
	}
	if len(pkgs) == 0 && first != "" {
		pkgs = []string{first}
	}
	var out []string
	for _, p := range pkgs {
		if strings.ContainsAny(p, ":/\\") && !strings.HasPrefix(p, "@") || strings.HasPrefix(p, ".") {
			continue // a path, URL or git spec
		}
		name := strings.TrimPrefix(p, "@")
		_, version, _ := strings.Cut(name, "@")
		if !exactVersion.MatchString(version) {
			out = append(out, p)
		}
	}
	return out
}
