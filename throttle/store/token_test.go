package store_test

import (
	"sync"
	"testing"

	"github.com/go-throttle/throttle/throttle/store"
)

func TestNewTokenUnique(t *testing.T) {
	const goroutines, each = 8, 2000
	var mu sync.Mutex
	seen := make(map[string]bool, goroutines*each)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]string, each)
			for i := range local {
				local[i] = store.NewToken()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tok := range local {
				if seen[tok] {
					t.Errorf("token %q made twice", tok)
				}
				seen[tok] = true
			}
		}()
	}
	wg.Wait()
	if tok := store.NewToken(); len(tok) != 31 {
		t.Fatalf("token %q is %d bytes, want 31", tok, len(tok))
	}
}

func BenchmarkNewToken(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = store.NewToken()
		}
	})
}
