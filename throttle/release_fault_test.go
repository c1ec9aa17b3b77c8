package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// TestReleaseDuringFault: a lease released while Redis fails (the release
// lost, unanswered or refused) is released again once Redis answers, so
// that the key is free long before its 30 s TTL: no lock is left that
// nobody owns because its holder's release went astray.
func TestReleaseDuringFault(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	for _, f := range faults {
		if f.name == "killed" { // a restarted Redis has lost the key anyway
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			proxy := faultproxy.Start(t, srv.Addr)
			client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = client.Close() })
			st := redisstore.New(client)
			t.Cleanup(func() { _ = st.Close() })
			direct := srv.Client(t)
			ctx := context.Background()
			l := newLock(t, st, throttle.LockConfig{Name: "release-fault", Mode: throttle.Exclusive, TTL: 30 * time.Second,
				Options: throttle.Options{Timeout: 100 * time.Millisecond}})
			lease, err := l.Admit(ctx, "u")
			require.NoError(t, err)
			require.NotNil(t, lease)

			f.on(t, srv, proxy)
			err = lease.Release(ctx)
			f.off(t, srv, proxy)
			if !f.retried { // go-redis resends a command after a reset, and the release succeeds
				require.ErrorIs(t, err, throttle.ErrStore, "a release while Redis fails")
			}

			key := l.StoredKey("u")
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, err := direct.Exists(ctx, key).Result()
				if err == nil && n == 0 {
					break
				}
				if time.Now().After(deadline) {
					ttl, _ := direct.PTTL(ctx, key).Result()
					require.Failf(t, "lock left behind", "the released key %s is still held (%v left)", key, ttl)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
