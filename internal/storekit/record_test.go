package storekit_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-throttle/throttle/internal/storekit"
)

func TestRecordKey(t *testing.T) {
	k := storekit.Key("throttle", "submit", "a:b{c}")
	rk := storekit.RecordKey(k)
	if want := k + ":record"; rk != want {
		t.Fatalf("RecordKey(%q) = %q, want %q", k, rk, want)
	}
	// One Redis Cluster slot for the lock, its record and its fence
	// counter, so that one script may touch them together.
	if hashTag(rk) != hashTag(k) {
		t.Fatalf("record key %q and lock key %q hash differently", rk, k)
	}
	if rk == storekit.FenceKey(k) {
		t.Fatalf("record key and fence key are both %q", rk)
	}
	// No lock key made by Key is the record key of another: lock keys end
	// with their hash tag's closing brace, which escaping keeps out of
	// identities.
	if strings.HasSuffix(rk, "}") {
		t.Fatalf("record key %q ends like a lock key", rk)
	}
}

// Example_recordKey shows the key a Redis store keeps a lock's record under,
// next to the lock in the same hash tag.
func Example_recordKey() {
	k := storekit.Key("throttle", "submit", "42")
	fmt.Println(storekit.RecordKey(k))
	// Output:
	// throttle:{submit:42}:record
}
