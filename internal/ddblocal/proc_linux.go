package ddblocal

import (
	"os/exec"
	"syscall"
)

// setProcAttr kills the JVM when the test binary dies without running Main.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
