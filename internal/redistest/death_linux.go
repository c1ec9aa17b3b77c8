package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks Linux to kill redis-server if the test binary dies
// without running its cleanups (a panic in another goroutine, a timeout),
// so that no server outlives its test.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
