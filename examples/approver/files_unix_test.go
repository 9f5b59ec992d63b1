//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/files/filestest"
)

// The example's secret reader refuses the same hostile files as every
// other reader of a trusted file (TestFiles_EveryTrustedReadRefusesTheSameFiles
// in proxy/internal/cli cannot reach a main package, so it runs here).
func TestFiles_ExampleSecretReaderRefusesTheSameFiles(t *testing.T) {
	filestest.Refuse(t, []filestest.Reader{
		{Name: "examples/approver readSecret", Good: []byte(strings.Repeat("s", 40) + "\n"), Max: maxSecretFile,
			Read: func(p string) error { _, err := readSecret(p); return err }},
	})
}
