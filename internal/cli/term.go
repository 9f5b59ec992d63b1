package cli

import (
	"io"
	"os"
)

// isTerminalInput reports whether r is a terminal a person can type at: a
// character device that is not the null device. Anything else (a pipe, a
// file, /dev/null, a reader that is not a file) is not, and agentrt never
// guesses an answer from it.
func isTerminalInput(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// isTerminalOutput reports whether w is a terminal, to decide whether to
// show progress.
func isTerminalOutput(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too; compare the file, not the path.
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}
