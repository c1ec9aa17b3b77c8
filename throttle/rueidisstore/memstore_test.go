package rueidisstore_test

import (
	"time"

	"github.com/go-throttle/throttle/throttle/memstore"
)

func memstoreWithClock(now func() time.Time) *memstore.Store {
	return memstore.New(memstore.WithClock(now))
}
