package memstore

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestWatchSignalsOnlyWhenFreed(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "o", TTL: time.Minute, Reentrant: true}
	s.Acquire(bg, req)
	s.Acquire(bg, req)
	ch1, stop1, err := s.Watch(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	ch2, stop2, _ := s.Watch(bg, "k")
	other, stopOther, _ := s.Watch(bg, "other")
	defer stopOther()

	outcome(t, store.HeldByOther)(s.Release(bg, "k", "x"))
	outcome(t, store.StillHeld)(s.Release(bg, "k", "o"))
	if signalled(ch1) || signalled(ch2) {
		t.Fatal("signalled while the key is still held")
	}
	outcome(t, store.OK)(s.Release(bg, "k", "o"))
	if !signalled(ch1) || !signalled(ch2) {
		t.Fatal("a waiter was not signalled when the key was freed")
	}
	if signalled(other) {
		t.Fatal("a waiter of another key was signalled")
	}
	// Signals never block the store, even when nobody reads.
	for range 3 {
		acquire(t, s, "k", "a", time.Minute)
		outcome(t, store.OK)(s.Release(bg, "k", "a"))
	}
	stop1()
	stop1()
	acquire(t, s, "k", "a", time.Minute)
	outcome(t, store.OK)(s.Release(bg, "k", "a"))
	if !signalled(ch2) {
		t.Fatal("stopping one waiter silenced another")
	}
	stop2()
	if _, _, watched := s.counts(); watched != 1 {
		t.Fatalf("%d watched keys after stop, want 1 (other)", watched)
	}
}

func TestWatchCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, _, err := New().Watch(ctx, "k"); err == nil {
		t.Fatal("Watch with a cancelled context returned no error")
	}
}

func TestLimiterWaitIsWokenByRelease(t *testing.T) {
	s := New()
	l, err := throttle.New(s, throttle.Policy{Name: "wait", Wait: time.Minute,
		Backoff: func(int) time.Duration { return time.Hour }})
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.Acquire(bg, "id")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(bg, "id")
		if err == nil {
			err = lease.Release(bg)
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the waiter start waiting; not required for correctness
	if err := first.Release(bg); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release (its backoff is an hour)")
	}
}
