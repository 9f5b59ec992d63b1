//go:build !unix

package mcp

import "os/exec"

// contain does nothing where there are no process groups: Close ends only
// the server itself.
func contain(*exec.Cmd) {}

func killGroup(int) {}
