package storekit_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/go-throttle/throttle/internal/storekit"
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
				local[i] = storekit.NewToken()
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
	if tok := storekit.NewToken(); len(tok) != 31 {
		t.Fatalf("token %q is %d bytes, want 31", tok, len(tok))
	}
}

func BenchmarkNewToken(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = storekit.NewToken()
		}
	})
}

// TestTokenEncoding checks that AppendToken writes what base64 does: the
// prefix and the counter encoded as one 23-byte value.
func TestTokenEncoding(t *testing.T) {
	for range 1000 {
		tok := storekit.NewToken()
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(raw) != 23 {
			t.Fatalf("token %q: %d bytes, %v", tok, len(raw), err)
		}
		if again := base64.RawURLEncoding.EncodeToString(raw); again != tok {
			t.Fatalf("token %q encodes back as %q", tok, again)
		}
		next, _ := base64.RawURLEncoding.DecodeString(storekit.NewToken())
		if !bytes.Equal(raw[:15], next[:15]) ||
			binary.BigEndian.Uint64(next[15:]) != binary.BigEndian.Uint64(raw[15:])+1 {
			t.Fatalf("tokens %x and %x: want one prefix and consecutive counters", raw, next)
		}
	}
}
