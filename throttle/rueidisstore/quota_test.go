package rueidisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
)

// TestQuotaNewKeyStep checks a charge that starts with SET NX (a new key's
// step) against the script alone (see redistest.CheckQuotaNewKey).
func TestQuotaNewKeyStep(t *testing.T) {
	for _, path := range []string{"set", "script"} {
		t.Run(path, func(t *testing.T) {
			s, srv := newStore(t, rueidisstore.WithPath(path))
			redistest.CheckQuotaNewKey(t, s, srv.Client(t), path == "script", func() string { return key(t) })
		})
	}
}
