package redistest

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// stateTimeout bounds how long waitState watches for a signal to take
// effect; it gives up silently, as the signal was sent anyway.
const stateTimeout = 5 * time.Second

// waitState waits until /proc shows the process stopped (job-control stop,
// state T) when stopped is true, or no longer stopped when it is false, so
// that Pause returns only once the server can no longer execute anything.
// It returns early if the process exits.
func waitState(pid int, stopped bool, exited <-chan struct{}) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	deadline := time.Now().Add(stateTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return
		default:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return // gone, or /proc not mounted: nothing to wait for
		}
		// The state follows the command name, which is in parentheses and
		// may itself contain ") ".
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			if (b[i+2] == 'T') == stopped {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}
