package mcp

import "github.com/agentrt/agentrt/internal/files"

// MaxFileBytes is the most ReadOwned reads of a manifest, rules or
// configuration file.
const MaxFileBytes = 16 << 20

// ReadOwned reads a file under the rule for every file agentrt trusts: a
// regular file, reached without following a symbolic link (and without
// waiting on a FIFO), owned by the effective user, writable by neither
// group nor others, at most MaxFileBytes, checked on the open descriptor.
// Whoever can write a manifest or rules file chooses how every tool is
// classified. A refusal is an *agentrt.InsecureModeError (ErrInsecureMode,
// and ErrSymlink for a link).
func ReadOwned(path string) ([]byte, error) { return files.ReadOwned(path, MaxFileBytes) }
