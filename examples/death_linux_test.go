package examples_test

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks Linux to kill an example process if the test binary
// dies without running its cleanups (a panic, a test timeout), so that no
// server outlives the test.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
