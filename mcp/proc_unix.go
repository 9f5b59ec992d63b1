//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// contain puts the server in its own process group, so Close can kill the
// group whole. There is no death signal outside Linux.
func contain(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
