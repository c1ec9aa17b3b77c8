package rueidisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// TestConformance runs the shared store suite on one Redis server, once with
// plain acquisitions as SET NX GET (the default) and once on the pipeline
// kept for servers before Redis 7.0.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	for _, getOnSet := range []bool{true, false} {
		name := "set-get"
		if !getOnSet {
			name = "pipeline"
		}
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) throttle.Store {
				s := rueidisstore.New(newClient(t, srv))
				s.SetGetOnSet(getOnSet)
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}
