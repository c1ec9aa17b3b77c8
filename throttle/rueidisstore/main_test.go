package rueidisstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/redistest"
)

// The store starts goroutines for Watch, and rueidis for its connections;
// every test must leave none behind once both are closed. The exception is
// rueidis's own: a cluster client that refreshes its slot map after a MOVED
// does so after a pause of up to a second, in a goroutine that Close does
// not wait for and that ends after the pause; and one whose refresh drops a
// node's connection closes it 5 s later, in another such goroutine.
func TestMain(m *testing.M) {
	opts := append(redistest.IgnoreResolver(), goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
	goleak.VerifyTestMain(m, opts...)
}
