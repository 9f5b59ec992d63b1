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
	h, ok := hostArg("restore-host-config", *from, false, stderr)
	if !ok {
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

// hostArg finds the host -from names for cmd (detect as findHost has
// it); a missing or unknown host is a usage error on stderr.
func hostArg(cmd, from string, detect bool, stderr io.Writer) (*host, bool) {
	if from == "" {
		fmt.Fprintln(stderr, "agentrt-proxy "+cmd+": -from HOST is required: "+strings.Join(hostIDs, ", ")+", or a path")
		return nil, false
	}
	h, err := findHost(from, detect)
	if err != nil {
		fmt.Fprintf(stderr, "agentrt-proxy %s: %s\n", cmd, trace.Sanitize(err.Error()))
		return nil, false
	}
	return h, true
}
