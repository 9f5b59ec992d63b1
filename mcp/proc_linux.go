//go:build linux

package mcp

import (
	"os/exec"
	"syscall"
)

// contain puts the server in its own process group, so a terminal's Ctrl-C
// reaches this process and not the server and Close can kill the group
// whole, and has the kernel kill the server if the thread that started it
// dies. The server's own descendants get no death signal; Close kills them
// with the group.
func contain(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
