package redisstore_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// replicated is a master and one replica whose replication link runs
// through a fault proxy, so that a test can delay or cut what the replica
// receives while the replica stays connected, as a slow or partitioned
// network would.
type replicated struct {
	master, replica *redistest.Server
	link            *faultproxy.Proxy
}

// startReplicated starts the pair and waits until the replica is in sync.
func startReplicated(t testing.TB) replicated {
	t.Helper()
	master := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	link := faultproxy.Start(t, master.Addr)
	host, port, _ := net.SplitHostPort(link.Addr())
	replica := redistest.Start(t, "--replicaof", host, port)
	redistest.WaitInSync(t, master, replica)
	return replicated{master: master, replica: replica, link: link}
}

// ackModes are the acquisition paths WithReplicaAck must cover.
var ackModes = []struct {
	name     string
	scripted bool
	req      func(key string) store.Request
}{
	{"pipeline", false, func(k string) store.Request {
		return store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute}
	}},
	{"script", true, func(k string) store.Request {
		return store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute}
	}},
	{"fenced", false, func(k string) store.Request {
		return store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute, Fence: true}
	}},
	{"reentrant", false, func(k string) store.Request {
		return store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute, Reentrant: true}
	}},
}

// ackStore returns a store on the master with opts and a round-trip
// counter on its client, after the store loaded its scripts (so that no
// SCRIPT LOAD adds a round trip later).
func ackStore(t testing.TB, r replicated, scripted bool, opts ...redisstore.Option) (*redisstore.Store, *tripCounter) {
	t.Helper()
	c := r.master.Client(t)
	trips := &tripCounter{}
	c.AddHook(trips)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	loadScripts(t, s, c)
	_ = c.Ping(context.Background()) // the connection's handshake is not a round trip of the store
	trips.n.Store(0)
	return s, trips
}

// TestReplicaAckWaitsForReplica proves that a grant under WithReplicaAck
// is reported only once the replica has the key, on every acquisition
// path, in one round trip. Replication is slowed to 200 ms by the proxy:
// without the option the key is not yet on the replica when the grant
// returns (the control, which shows the check can fail); with it, it is,
// and the grant took at least that long.
func TestReplicaAckWaitsForReplica(t *testing.T) {
	const lag = 200 * time.Millisecond
	r := startReplicated(t)
	r.link.SetLatency(0, lag)
	for _, m := range ackModes {
		for _, ack := range []bool{false, true} {
			name := m.name + "/off"
			var opts []redisstore.Option
			if ack {
				name = m.name + "/on"
				opts = append(opts, redisstore.WithReplicaAck(1, 5*time.Second))
			}
			t.Run(name, func(t *testing.T) {
				s, trips := ackStore(t, r, m.scripted, opts...)
				req := m.req(key(t))
				start := time.Now()
				mustAcquire(t, s, req)
				onReplica := exists(t, r.replica, req.Key)
				took := time.Since(start)
				assert.EqualValues(t, 1, trips.n.Load(), "round trips of the grant")
				switch {
				case ack:
					require.True(t, onReplica, "a grant acknowledged by the replica is not on the replica")
					require.GreaterOrEqual(t, took, lag, "the grant took less than the replication lag")
				case onReplica:
					require.GreaterOrEqual(t, took, lag/2, "without the option the key reached the replica within %v despite the %v lag: "+
						"the proxy does not delay replication and the test proves nothing", took, lag)
				}
			})
		}
	}
}

// TestReplicaAckRefusesUnreplicated cuts the replication link (the proxy
// holds every byte; the replica stays connected but receives nothing, so
// WAIT gets no acknowledgement) and proves that on every path an
// acquisition that took the key is not reported as granted: it fails after
// the WAIT timeout with ErrNotReplicated and store.ErrNotApplied, and the
// key has been released on the master, in two round trips. Without the
// option the same acquisition is granted. A rejection stays a rejection.
// A Lock decides the failed grant by its WhenStoreFails policy, and once
// the link is back, grants are confirmed again.
func TestReplicaAckRefusesUnreplicated(t *testing.T) {
	const timeout = 100 * time.Millisecond
	r := startReplicated(t)
	ctx := context.Background()
	// Stores made before the cut, so that their set-up reaches the replica.
	type pair struct{ on, off *redisstore.Store }
	stores := map[string]pair{}
	trips := map[string]*tripCounter{}
	for _, m := range ackModes {
		on, n := ackStore(t, r, m.scripted, redisstore.WithReplicaAck(1, timeout))
		off, _ := ackStore(t, r, m.scripted)
		stores[m.name], trips[m.name] = pair{on, off}, n
	}
	r.link.SetBlackHole(true)

	for _, m := range ackModes {
		t.Run(m.name, func(t *testing.T) {
			st := stores[m.name]
			req := m.req(key(t))
			trips[m.name].n.Store(0)
			start := time.Now()
			g, err := st.on.Acquire(ctx, req)
			took := time.Since(start)
			require.Error(t, err, "unreplicated acquisition = %+v; want an error", g)
			require.False(t, g.Acquired, "unreplicated acquisition = %+v", g)
			require.ErrorIs(t, err, redisstore.ErrNotReplicated)
			require.ErrorIs(t, err, store.ErrNotApplied)
			require.GreaterOrEqual(t, took, timeout, "refused before the WAIT timeout")
			assert.EqualValues(t, 2, trips[m.name].n.Load(), "round trips of the refused acquisition (acquire+WAIT, release)")
			require.False(t, exists(t, r.master, req.Key), "the refused acquisition left the key held on the master")
			// The control: without the option the master grants it.
			mustAcquire(t, st.off, req)
			// A rejection is a rejection, not an error, with the option.
			g, err = st.on.Acquire(ctx, m.req(req.Key))
			require.NoError(t, err, "acquiring a held key with the option")
			require.False(t, g.Acquired, "acquiring a held key with the option = %+v; want a rejection", g)
			require.Positive(t, g.Remaining, "acquiring a held key with the option = %+v; want a rejection", g)
		})
	}

	t.Run("limiter", func(t *testing.T) {
		on := stores["pipeline"].on
		for _, tc := range []struct {
			name string // one policy per name on a store
			mode throttle.FailMode
			want error // nil: admitted unguarded
		}{{"ack-open", throttle.FailOpen, nil}, {"ack-closed", throttle.FailClosed, throttle.ErrStore}} {
			l, err := throttle.NewLock(on, throttle.LockConfig{Name: tc.name,
				Options: throttle.Options{WhenStoreFails: tc.mode, Timeout: time.Second}})
			require.NoError(t, err)
			lease, err := l.Admit(ctx, storekit.NewToken())
			require.Nil(t, lease, "%v: Admit's lease", tc.mode)
			if tc.want == nil {
				require.NoError(t, err, "%v: Admit", tc.mode)
			} else {
				require.ErrorIs(t, err, tc.want, "%v: Admit", tc.mode)
			}
			s := l.Stats()
			require.EqualValues(t, 1, s.StoreErrors, "%v: stats %+v, want one store error", tc.mode, s)
			require.EqualValues(t, 0, s.Acquired, "%v: stats %+v, want no grant", tc.mode, s)
		}
	})

	r.link.Clear()
	t.Run("recovered", func(t *testing.T) {
		for _, m := range ackModes {
			req := m.req(key(t))
			mustAcquire(t, stores[m.name].on, req)
			require.True(t, exists(t, r.replica, req.Key), "%s: a confirmed grant is not on the replica", m.name)
		}
	})
}

// TestReplicaAckOwnTokenRetry: an acquisition that finds the key held by
// its own token (the retry of one whose reply was lost) wrote nothing, so
// its WAIT proves nothing; the store confirms it with a token-checked TTL
// rewrite and a WAIT after it, one more round trip. It is granted, with
// what is left of the TTL, while the replica acknowledges, and refused
// (key released) when it does not.
func TestReplicaAckOwnTokenRetry(t *testing.T) {
	r := startReplicated(t)
	ctx := context.Background()
	for _, scripted := range []bool{false, true} {
		name := "pipeline"
		if scripted {
			name = "script"
		}
		t.Run(name, func(t *testing.T) {
			s, trips := ackStore(t, r, scripted, redisstore.WithReplicaAck(1, 100*time.Millisecond))
			req := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}
			first := mustAcquire(t, s, req)
			time.Sleep(5 * time.Millisecond) // the retry sees a shorter PTTL
			trips.n.Store(0)
			again := mustAcquire(t, s, req)
			require.Positive(t, again.TTL, "retry grant TTL, want what is left of %v", first.TTL)
			require.Less(t, again.TTL, first.TTL, "retry grant TTL, want what is left of %v", first.TTL)
			assert.EqualValues(t, 2, trips.n.Load(), "round trips of the confirmed retry")
			pttl, err := r.master.Client(t).PTTL(ctx, req.Key).Result()
			require.NoError(t, err, "PTTL after the confirmed retry")
			require.LessOrEqual(t, pttl, again.TTL+50*time.Millisecond, "PTTL after the confirmed retry; want about %v", again.TTL)
			require.GreaterOrEqual(t, pttl, again.TTL-time.Second, "PTTL after the confirmed retry; want about %v", again.TTL)

			r.link.SetBlackHole(true)
			defer r.link.Clear()
			g, err := s.Acquire(ctx, req)
			require.ErrorIs(t, err, redisstore.ErrNotReplicated, "unconfirmable retry = %+v", g)
			require.False(t, g.Acquired, "unconfirmable retry = %+v", g)
			require.False(t, exists(t, r.master, req.Key), "the refused retry left the key held")
		})
	}
}

// TestReplicaAckOptionValues checks the option's arguments on a server
// without replicas, where every WAIT for one replica times out: replicas
// <= 0 and a later WithReplicaAck(0, ...) switch it off, a timeout <= 0
// means 50ms, a fractional one is rounded up to whole
// milliseconds; and New refuses it on a Cluster client.
func TestReplicaAckOptionValues(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		opts   []redisstore.Option
		within string // "" means granted
		min    time.Duration
	}{
		{"zero-replicas", []redisstore.Option{redisstore.WithReplicaAck(0, time.Second)}, "", 0},
		{"negative-replicas", []redisstore.Option{redisstore.WithReplicaAck(-1, time.Second)}, "", 0},
		{"switched-off", []redisstore.Option{redisstore.WithReplicaAck(1, time.Second), redisstore.WithReplicaAck(0, 0)}, "", 0},
		{"default-timeout", []redisstore.Option{redisstore.WithReplicaAck(1, 0)}, "within 50ms", 50 * time.Millisecond},
		{"rounded-up", []redisstore.Option{redisstore.WithReplicaAck(1, 1500*time.Microsecond)}, "within 2ms", 2 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := redisstore.New(c, tc.opts...)
			t.Cleanup(func() { _ = s.Close() })
			start := time.Now()
			g, err := s.Acquire(ctx, store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute})
			took := time.Since(start)
			if tc.within == "" {
				require.NoError(t, err, "with the option off: %+v, %v; want granted", g, err)
				require.True(t, g.Acquired, "with the option off: %+v, %v; want granted", g, err)
				return
			}
			require.ErrorIs(t, err, redisstore.ErrNotReplicated)
			require.ErrorContains(t, err, tc.within)
			require.GreaterOrEqual(t, took, tc.min, "refused before the timeout")
		})
	}

	t.Run("cluster", func(t *testing.T) {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
		defer cc.Close()
		defer func() {
			require.NotNil(t, recover(), "New accepted WithReplicaAck on a ClusterClient")
		}()
		s := redisstore.New(cc, redisstore.WithReplicaAck(1, time.Second))
		_ = s.Close()
	})
}
