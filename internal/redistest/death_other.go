//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing outside Linux, which has no parent-death
// signal; t.Cleanup still stops the server on every normal exit.
func setDeathSignal(*exec.Cmd) {}
