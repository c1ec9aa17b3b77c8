package storekit_test

import (
	"fmt"

	"github.com/go-throttle/throttle/internal/storekit"
)

// Key shows what a Limiter stores: the prefix, then the policy name and the
// identity inside a Redis Cluster hash tag, escaped so that no two
// identities meet.
func Example_key() {
	fmt.Println(storekit.Key("throttle", "submit", "42"))
	fmt.Println(storekit.Key("throttle", "submit", storekit.JoinID("42", "POST /orders")))
	fmt.Println(storekit.FenceKey(storekit.Key("throttle", "jobs", "c1")))
	// Output:
	// throttle:{submit:42}
	// throttle:{submit:42%3APOST%2520/orders}
	// throttle:{jobs:c1}:fence
}
