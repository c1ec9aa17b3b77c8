//go:build !linux

package examples_test

import "os/exec"

// setDeathSignal does nothing outside Linux; the cleanups registered by
// startApp kill the example processes by PID.
func setDeathSignal(*exec.Cmd) {}
