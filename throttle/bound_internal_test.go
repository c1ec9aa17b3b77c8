package throttle

import (
	"context"
	"runtime"
	"testing"
	"time"
)

type boundKey struct{}

// TestBoundsShared: calls that cannot be cancelled share one bound per
// slice, whose deadline leaves each at least the timeout and at most an
// eighth more; the caller's values stay visible; a context derived from
// the bound ends with it, without a goroutine of the context package.
func TestBoundsShared(t *testing.T) {
	b := &bounds{timeout: time.Hour}
	before := time.Now()
	c1, cancel1 := b.bind(context.Background())
	c2, cancel2 := b.bind(context.TODO())
	defer cancel1()
	defer cancel2()
	if c1.Done() == nil || c1.Done() != c2.Done() {
		t.Fatal("two calls in one slice do not share the bound")
	}
	d, ok := c1.Deadline()
	if !ok || d.Before(before.Add(time.Hour)) || d.After(time.Now().Add(time.Hour+time.Hour/8)) {
		t.Fatalf("deadline %v, want within [timeout, timeout + timeout/8] of %v", d, before)
	}

	vctx := context.WithValue(context.Background(), boundKey{}, "span")
	c3, cancel3 := b.bind(vctx)
	defer cancel3()
	if c3.Value(boundKey{}) != "span" || c3.Done() != c1.Done() {
		t.Fatalf("values context: value %v, shares the bound %v", c3.Value(boundKey{}), c3.Done() == c1.Done())
	}
	g := runtime.NumGoroutine()
	child, cancelChild := context.WithTimeout(c3, time.Hour)
	if n := runtime.NumGoroutine(); n > g {
		t.Fatalf("deriving from the bound started %d goroutine(s)", n-g)
	}
	cancelChild()
	if child.Err() == nil {
		t.Fatal("child not cancelled")
	}
}

// TestBoundsExpire: a shared bound ends at its deadline, and a later call
// gets a fresh one; a child derived from it ends with it.
func TestBoundsExpire(t *testing.T) {
	b := &bounds{timeout: 5 * time.Millisecond}
	c1, _ := b.bind(context.WithValue(context.Background(), boundKey{}, 1))
	child, cancel := context.WithCancel(c1)
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the child of a 5ms bound did not end")
	}
	if c1.Err() != context.DeadlineExceeded || child.Err() == nil {
		t.Fatalf("errors %v, %v; want the deadline", c1.Err(), child.Err())
	}
	c2, _ := b.bind(context.Background())
	if c2.Err() != nil {
		t.Fatalf("a call after the slice got an ended bound: %v", c2.Err())
	}
}

// TestBoundsCancellable: a context that can be cancelled gets its own
// bound, which its cancellation ends; one that ends before the timeout is
// used as it is; detach drops the cancellation but keeps the values.
func TestBoundsCancellable(t *testing.T) {
	b := &bounds{timeout: time.Hour}
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), boundKey{}, "v"))
	c, cancel := b.bind(parent)
	defer cancel()
	if d, ok := c.Deadline(); !ok || time.Until(d) > time.Hour {
		t.Fatalf("deadline %v, %v", d, ok)
	}
	detached, cancelDetached := b.detach(parent)
	defer cancelDetached()
	cancelParent()
	if c.Err() == nil {
		t.Fatal("the caller's cancellation did not reach the bound")
	}
	if detached.Err() != nil || detached.Value(boundKey{}) != "v" {
		t.Fatalf("detached: %v, value %v", detached.Err(), detached.Value(boundKey{}))
	}

	soon, cancelSoon := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSoon()
	if c, _ := b.bind(soon); c != soon {
		t.Fatal("a context ending sooner than the timeout was wrapped")
	}
}

// TestBoundsAllocs: the shared bound costs nothing per call for
// context.Background, and one small value for a context of values.
func TestBoundsAllocs(t *testing.T) {
	b := &bounds{timeout: time.Hour}
	bg := context.Background()
	if n := testing.AllocsPerRun(100, func() { _, c := b.bind(bg); c() }); n != 0 {
		t.Errorf("Background: %v allocs, want 0", n)
	}
	v := context.WithValue(bg, boundKey{}, 1)
	if n := testing.AllocsPerRun(100, func() { _, c := b.bind(v); c() }); n > 1 {
		t.Errorf("values: %v allocs, want 1", n)
	}
}
