package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/agentrt/agentrt/trace"
)

// restoreHostConfig puts back, byte for byte, the newest backup init
// -write-host-config made of a host's file. The backup stays, so a
// restore can be repeated.
func restoreHostConfig(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("agentrt-proxy restore-host-config", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	from := fset.String("from", "", "the host given to init: claude-desktop, claude-code, cursor, vscode, or the path")
	if code, ok := parse("restore-host-config", fset, args, stderr); !ok {
		return code
	}
	if *from == "" {
		fmt.Fprintln(stderr, "agentrt-proxy restore-host-config: -from HOST is required: "+strings.Join(hostIDs, ", ")+", or a path")
		return ExitUsage
	}
	h, err := findHost(*from, false)
	if err != nil {
		fmt.Fprintf(stderr, "agentrt-proxy restore-host-config: %s\n", trace.Sanitize(err.Error()))
		return ExitUsage
	}
	target, backup, err := latestBackup(h)
	if err != nil {
		return fail(stderr, "restore-host-config", err)
	}
	b, err := readBackup(backup)
	if err != nil {
		return fail(stderr, "restore-host-config", err)
	}
	perm := fs.FileMode(0o600)
	if fi, err := os.Stat(target); err == nil {
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(stderr, "restore-host-config", err)
	}
	if err := replaceFile(target, b, perm); err != nil {
		return fail(stderr, "restore-host-config", err)
	}
	fmt.Fprintf(stdout, "restored %s from %s; restart the host\n", trace.Sanitize(target), trace.Sanitize(backup))
	return ExitOK
}
