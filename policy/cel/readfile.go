package cel

import "github.com/agentrt/agentrt/internal/files"

// readOwned reads a policy or cases file under the rule for every file
// agentrt trusts (internal/files): a regular file named by itself, owned
// by the effective user, writable by no one else, at most max bytes,
// checked on the open descriptor.
func readOwned(path string, max int64) ([]byte, error) { return files.ReadOwned(path, max) }
