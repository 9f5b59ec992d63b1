//go:build !unix

package mcp

import "os"

// ReadOwned reads a file. Where file modes do not mean owner, group and
// others, there is nothing to check.
func ReadOwned(path string) ([]byte, error) { return os.ReadFile(path) }
