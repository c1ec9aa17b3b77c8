package redisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// TestConformance runs the shared store suite on one Redis server, once with
// plain acquisitions on the SET+PTTL pipeline (the default) and once on the
// acquire script.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	for _, scripted := range []bool{false, true} {
		name := "pipeline"
		if scripted {
			name = "script"
		}
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) throttle.Store {
				s := redisstore.New(srv.Client(t))
				s.SetScriptedPlain(scripted)
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}
