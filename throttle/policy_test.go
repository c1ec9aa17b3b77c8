package throttle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestLockDefaults(t *testing.T) {
	l := newLock(t, brokenStore{}, throttle.LockConfig{Name: "submit"})
	c := l.Config()
	assert.Equal(t, "submit", c.Name)
	assert.Equal(t, throttle.Dedupe, c.Mode)
	assert.Equal(t, 5*time.Second, c.TTL)
	assert.Equal(t, "throttle", c.Prefix)
	assert.Equal(t, 100*time.Millisecond, c.Timeout)
	assert.Equal(t, throttle.FailOpen, c.WhenStoreFails)
	assert.NotNil(t, c.Backoff)
	assert.Zero(t, c.Wait)
	assert.Zero(t, c.MaxHold)

	c = newLock(t, brokenStore{}, throttle.LockConfig{Name: "mail", Mode: throttle.Cooldown}).Config()
	assert.Equal(t, throttle.FailOpen, c.WhenStoreFails, "Cooldown fails open")
	assert.Equal(t, 5*time.Second, c.TTL)

	c = newLock(t, brokenStore{}, throttle.LockConfig{Name: "sync", Mode: throttle.Exclusive}).Config()
	assert.Equal(t, throttle.FailClosed, c.WhenStoreFails, "Exclusive fails closed")
	assert.Equal(t, 30*time.Second, c.TTL, "an Exclusive key's TTL is its lease")

	// What is set is kept.
	set := throttle.LockConfig{Name: "set", Mode: throttle.Exclusive, TTL: time.Minute, MaxHold: time.Hour,
		Wait: time.Second, Fence: true, Reentrant: true,
		Options: throttle.Options{Prefix: "app", Timeout: time.Second, WhenStoreFails: throttle.FailOpen, DryRun: true}}
	c = newLock(t, memstore.New(), set).Config()
	c.Backoff = nil // a func: not comparable
	assert.Equal(t, set, c)
}

func TestQuotaDefaults(t *testing.T) {
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "api"})
	c := q.Config()
	assert.Equal(t, "api", c.Name)
	assert.Zero(t, c.Wait)
	assert.Equal(t, "throttle", c.Prefix)
	assert.Equal(t, 100*time.Millisecond, c.Timeout)
	assert.Equal(t, throttle.FailOpen, c.WhenStoreFails, "a Quota fails open")
}

func TestReplayDefaults(t *testing.T) {
	r := newReplay(t, memstore.New(), throttle.ReplayConfig{Name: "order"})
	c := r.Config()
	assert.Equal(t, "order", c.Name)
	assert.Equal(t, 5*time.Second, c.TTL)
	assert.Equal(t, 5*time.Second, c.Wait, "a duplicate waits 5s for its original by default")
	assert.Equal(t, throttle.FailClosed, c.WhenStoreFails, "a Replay fails closed")
	assert.Equal(t, "throttle", c.Prefix)
	assert.Equal(t, 100*time.Millisecond, c.Timeout)
	assert.False(t, c.Fence)

	// A negative Wait is Replay's "do not wait", kept as it is.
	c = newReplay(t, memstore.New(), throttle.ReplayConfig{Name: "order", Wait: -1}).Config()
	assert.Equal(t, time.Duration(-1), c.Wait)
}

func TestLockInvalid(t *testing.T) {
	cases := map[string]throttle.LockConfig{
		"no name":          {},
		"long name":        {Name: string(make([]byte, 65))},
		"quote in name":    {Name: `a"b`},
		"backslash":        {Name: `a\b`},
		"control char":     {Name: "a\nb"},
		"tiny ttl":         {Name: "a", TTL: time.Microsecond},
		"negative ttl":     {Name: "a", TTL: -time.Second},
		"tiny lease":       {Name: "a", Mode: throttle.Exclusive, TTL: 2 * time.Millisecond},
		"brace prefix":     {Name: "a", Options: throttle.Options{Prefix: "x{y"}},
		"negative wait":    {Name: "a", Wait: -1},
		"negative maxhold": {Name: "a", MaxHold: -1},
		"negative timeout": {Name: "a", Options: throttle.Options{Timeout: -1}},
		"bad mode":         {Name: "a", Mode: 9},
		"quota mode":       {Name: "a", Mode: throttle.ModeQuota},
		"replay mode":      {Name: "a", Mode: throttle.ModeReplay},
		"bad fail mode":    {Name: "a", Options: throttle.Options{WhenStoreFails: throttle.FailOver + 1}},
		"over, no spare":   {Name: "a", Options: throttle.Options{WhenStoreFails: throttle.FailOver}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := throttle.NewLock(brokenStore{}, c)
			isOnly(t, err, store.ErrInvalid)
			assert.Nil(t, l)
		})
	}
	_, err := throttle.NewLock(nil, throttle.LockConfig{Name: "a"})
	isOnly(t, err, store.ErrInvalid)
}

func TestQuotaInvalid(t *testing.T) {
	cases := map[string]throttle.QuotaConfig{
		"no name":          {},
		"quote in name":    {Name: `a"b`},
		"brace prefix":     {Name: "a", Options: throttle.Options{Prefix: "x}y"}},
		"negative wait":    {Name: "a", Wait: -time.Second},
		"negative timeout": {Name: "a", Options: throttle.Options{Timeout: -1}},
		"over, no spare":   {Name: "a", Options: throttle.Options{WhenStoreFails: throttle.FailOver}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			q, err := throttle.NewQuota(memstore.New(), c)
			isOnly(t, err, store.ErrInvalid)
			assert.Nil(t, q)
		})
	}
	_, err := throttle.NewQuota(nil, throttle.QuotaConfig{Name: "a"})
	isOnly(t, err, store.ErrInvalid)
}

func TestReplayInvalid(t *testing.T) {
	cases := map[string]throttle.ReplayConfig{
		"no name":          {},
		"long name":        {Name: string(make([]byte, 65))},
		"tiny ttl":         {Name: "a", TTL: time.Microsecond},
		"brace prefix":     {Name: "a", Options: throttle.Options{Prefix: "{"}},
		"negative timeout": {Name: "a", Options: throttle.Options{Timeout: -1}},
		"over, no spare":   {Name: "a", Options: throttle.Options{WhenStoreFails: throttle.FailOver}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := throttle.NewReplay(memstore.New(), c)
			isOnly(t, err, store.ErrInvalid)
			assert.Nil(t, r)
		})
	}
	_, err := throttle.NewReplay(nil, throttle.ReplayConfig{Name: "a"})
	isOnly(t, err, store.ErrInvalid)
}

func TestBackoffs(t *testing.T) {
	exp := throttle.ExponentialJitter(10*time.Millisecond, 80*time.Millisecond)
	for attempt := 1; attempt < 70; attempt++ {
		ceil := 10 * time.Millisecond << min(attempt-1, 3)
		d := exp(attempt)
		require.Positive(t, d, "ExponentialJitter attempt %d", attempt)
		require.LessOrEqual(t, d, ceil, "ExponentialJitter attempt %d", attempt)
	}
}

// TestRemoteWindow: a key held on a store outside the process needs a TTL
// of at least 3 ms (a shorter grant is spent before its reply arrives, and
// failing open would admit everything); in memory 1 ms is enough. Under
// FailOver the Fallback counts as well. A Quota holds no key: its Rate,
// window included, is a value of each call.
func TestRemoteWindow(t *testing.T) {
	remote, local := brokenStore{}, memstore.New()
	over := func(fallback store.Store) throttle.Options {
		return throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: fallback}
	}
	cases := []struct {
		name string
		new  func() error
		ok   bool
	}{
		{"remote 2ms", lock(remote, throttle.LockConfig{Name: "a", TTL: 2 * time.Millisecond}), false},
		{"remote cooldown 1ms", lock(remote, throttle.LockConfig{Name: "a", Mode: throttle.Cooldown, TTL: time.Millisecond}), false},
		{"remote replay 2ms", func() error {
			_, err := throttle.NewReplay(remote, throttle.ReplayConfig{Name: "a", TTL: 2 * time.Millisecond})
			return err
		}, false},
		{"remote 3ms", lock(remote, throttle.LockConfig{Name: "a", TTL: 3 * time.Millisecond}), true},
		{"remote exclusive 3ms", lock(remote, throttle.LockConfig{Name: "a", Mode: throttle.Exclusive, TTL: 3 * time.Millisecond}), true},
		{"memory 1ms", lock(local, throttle.LockConfig{Name: "a", TTL: time.Millisecond}), true},
		{"memory, remote fallback", lock(local, throttle.LockConfig{Name: "a", TTL: time.Millisecond, Options: over(remote)}), false},
		{"remote, memory fallback", lock(remote, throttle.LockConfig{Name: "a", TTL: time.Millisecond, Options: over(local)}), false},
		{"memory, memory fallback", lock(local, throttle.LockConfig{Name: "a", TTL: time.Millisecond, Options: over(memstore.New())}), true},
		{"remote quota", func() error {
			_, err := throttle.NewQuota(&failingQuota{Store: remote}, throttle.QuotaConfig{Name: "a"})
			return err
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.new()
			if c.ok {
				require.NoError(t, err)
				return
			}
			isOnly(t, err, store.ErrInvalid)
			require.ErrorContains(t, err, "shorter than 3ms", "the error does not say why")
		})
	}

	// A quota's window of 1 ms is fine in memory too (named apart from the
	// locks above: one name is one policy on a store).
	q := newQuota(t, local, throttle.QuotaConfig{Name: "q"})
	d, err := q.Allow(context.Background(), "u", throttle.Rate{Limit: 1, Window: time.Millisecond}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
}

// lock returns a function that makes a Lock on st configured by c and
// returns NewLock's error.
func lock(st store.Store, c throttle.LockConfig) func() error {
	return func() error {
		_, err := throttle.NewLock(st, c)
		return err
	}
}

// refusing is a store that cannot keep fencing tokens, as a Redlock store
// cannot: it says so through Refuses.
type refusing struct{ store.Store }

func (refusing) Refuses(req store.Request) error {
	if req.Fence {
		return fmt.Errorf("%w: no fencing tokens here", store.ErrInvalid)
	}
	return nil
}

// TestStoreRefuses: NewLock and NewReplay refuse a config that their store
// says it cannot serve, rather than failing every acquisition later.
func TestStoreRefuses(t *testing.T) {
	st := refusing{memstore.New()}
	_, err := throttle.NewLock(st, throttle.LockConfig{Name: "f", Mode: throttle.Exclusive, Fence: true})
	isOnly(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "no fencing tokens")
	_, err = throttle.NewReplay(st, throttle.ReplayConfig{Name: "f", Fence: true})
	isOnly(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "no fencing tokens")
	newLock(t, st, throttle.LockConfig{Name: "f", Mode: throttle.Exclusive})
}
