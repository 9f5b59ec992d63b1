// Command dups prints the checkout's duplicate-pair count with Go import
// blocks blanked, and the raw count, computed as /work/shared/tools/dups.sh
// computes them (two equal import lists are not repeated logic). Run it at
// the repository root (`make dups`; CI prints it):
//
//	dups: N pairs with imports blanked (M raw)
//
// The blanked count reads the files git tracks, as they are in the working
// tree, with every Go file's import lines emptied; the raw count reads
// them unchanged, with the untracked files git does not ignore.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentrt/agentrt/internal/house"
)

func main() {
	tracked, err := gitFiles("--cached")
	if err == nil {
		var others []string
		others, err = gitFiles("--others", "--exclude-standard")
		if err == nil {
			blank := read(tracked, true)
			raw := read(append(tracked, others...), false)
			fmt.Printf("dups: %d pairs with imports blanked (%d raw)\n", house.DupPairs(blank), house.DupPairs(raw))
			return
		}
	}
	fmt.Fprintf(os.Stderr, "dups: git ls-files failed (run it at the root of a git checkout): %v\n", err)
	os.Exit(1)
}

func gitFiles(which ...string) ([]string, error) {
	out, err := exec.Command("git", append([]string{"ls-files", "-z"}, which...)...).Output()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(out), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

// read loads the files the count reads. blank empties Go import lines and
// follows links (dups.sh copies each file's target); otherwise a link is
// left out, as `duplicates` leaves it.
func read(names []string, blank bool) map[string]string {
	texts := map[string]string{}
	for _, n := range names {
		if !house.DupCounts(n) {
			continue
		}
		p := filepath.FromSlash(n)
		info, err := os.Lstat(p)
		if err != nil || (!blank && !info.Mode().IsRegular()) {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if blank && strings.HasSuffix(n, ".go") {
			src = house.BlankImports(src)
		}
		if house.DupReadable(src) {
			texts[n] = string(src)
		}
	}
	return texts
}
