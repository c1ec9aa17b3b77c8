package store_test

import (
	"fmt"

	"github.com/go-throttle/throttle/throttle/store"
)

// Key shows what a Limiter stores: the prefix, then the policy name and the
// identity inside a Redis Cluster hash tag, escaped so that no two
// identities meet.
func ExampleKey() {
	fmt.Println(store.Key("throttle", "submit", "42"))
	fmt.Println(store.Key("throttle", "submit", store.JoinID("42", "POST /orders")))
	fmt.Println(store.FenceKey(store.Key("throttle", "jobs", "c1")))
	// Output:
	// throttle:{submit:42}
	// throttle:{submit:42%3APOST%2520/orders}
	// throttle:{jobs:c1}:fence
}
