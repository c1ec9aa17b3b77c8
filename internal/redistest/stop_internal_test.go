package redistest

import (
	"syscall"
	"testing"
)

// TestStopPausedIsGraceful proves that stopping a paused server continues
// it so that it acts on SIGTERM and exits cleanly (status 0), rather than
// sitting stopped until the 10 s escalation to SIGKILL.
func TestStopPausedIsGraceful(t *testing.T) {
	s := Start(t)
	s.Pause(t)
	st := s.stop(syscall.SIGTERM)
	if st == nil {
		t.Fatal("stop found no running process")
	}
	if !st.Success() {
		t.Fatalf("paused server ended with %v; want a clean exit after SIGTERM", st)
	}
}
