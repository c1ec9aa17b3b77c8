package rueidisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestQuotaNewKeyStep checks a charge that starts with SET NX (a new key's
// step) against the script alone (see redistest.CheckQuotaNewKey).
func TestQuotaNewKeyStep(t *testing.T) {
	for _, scripted := range []bool{false, true} {
		name := "set-first"
		if scripted {
			name = "script"
		}
		t.Run(name, func(t *testing.T) {
			s, srv := newStore(t)
			s.SetQuotaScripted(scripted)
			redistest.CheckQuotaNewKey(t, s, srv.Client(t), scripted, func() string { return key(t) })
		})
	}
}
