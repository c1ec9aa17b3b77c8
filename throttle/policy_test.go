package throttle_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func TestPolicyDefaults(t *testing.T) {
	l, err := throttle.New(brokenStore{}, throttle.Policy{Name: "submit"})
	if err != nil {
		t.Fatal(err)
	}
	p := l.Policy()
	if p.Mode != throttle.Dedupe || p.Window != throttle.DefaultWindow || p.Prefix != throttle.DefaultPrefix ||
		p.Timeout != throttle.DefaultTimeout || p.WhenStoreFails != throttle.FailOpen ||
		p.RejectStatus != http.StatusTooManyRequests || p.Backoff == nil {
		t.Fatalf("unexpected defaults: %+v", p)
	}
	if !p.Failed(500) || !p.Failed(404) || p.Failed(201) || p.Failed(302) {
		t.Fatal("default Failed should be status >= 400")
	}
	if p.TTL() != throttle.DefaultWindow {
		t.Fatalf("TTL = %v", p.TTL())
	}

	l, err = throttle.New(brokenStore{}, throttle.Policy{Name: "sync", Mode: throttle.Exclusive})
	if err != nil {
		t.Fatal(err)
	}
	p = l.Policy()
	if p.WhenStoreFails != throttle.FailClosed || p.RejectStatus != http.StatusConflict || p.TTL() != throttle.DefaultLeaseTTL {
		t.Fatalf("unexpected Exclusive defaults: %+v", p)
	}
}

func TestPolicyInvalid(t *testing.T) {
	cases := map[string]throttle.Policy{
		"no name":        {},
		"long name":      {Name: string(make([]byte, 65))},
		"quote in name":  {Name: `a"b`},
		"control char":   {Name: "a\nb"},
		"tiny window":    {Name: "a", Window: time.Microsecond},
		"tiny lease":     {Name: "a", LeaseTTL: time.Millisecond},
		"brace prefix":   {Name: "a", Prefix: "x{y"},
		"negative wait":  {Name: "a", Wait: -1},
		"bad mode":       {Name: "a", Mode: 9},
		"bad status":     {Name: "a", RejectStatus: 200},
		"over, no spare": {Name: "a", WhenStoreFails: throttle.FailOver},
	}
	for name, p := range cases {
		if _, err := throttle.New(brokenStore{}, p); !errors.Is(err, throttle.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := throttle.New(nil, throttle.Policy{Name: "a"}); !errors.Is(err, throttle.ErrInvalid) {
		t.Errorf("nil store: err = %v", err)
	}
}

func TestBackoffs(t *testing.T) {
	exp := throttle.ExponentialJitter(10*time.Millisecond, 80*time.Millisecond)
	for attempt := 1; attempt < 70; attempt++ {
		ceil := 10 * time.Millisecond << min(attempt-1, 3)
		if d := exp(attempt); d <= 0 || d > ceil {
			t.Fatalf("ExponentialJitter attempt %d = %v, want (0, %v]", attempt, d, ceil)
		}
	}
	fixed := throttle.Fixed(20 * time.Millisecond)
	lin := throttle.Linear(10*time.Millisecond, 50*time.Millisecond)
	for attempt := 1; attempt < 20; attempt++ {
		if d := fixed(attempt); d < 20*time.Millisecond || d > 25*time.Millisecond {
			t.Fatalf("Fixed = %v", d)
		}
		want := min(10*time.Millisecond*time.Duration(attempt), 50*time.Millisecond)
		if d := lin(attempt); d < want || d > want+10*time.Millisecond/4 {
			t.Fatalf("Linear attempt %d = %v, want about %v", attempt, d, want)
		}
	}
}

// TestRemoteWindow: a key held on a store outside the process needs a TTL
// of at least 3 ms (a shorter grant is spent before its reply arrives, and
// failing open would admit everything); in memory, or for a Quota, 1 ms is
// enough. Under FailOver the Fallback counts as well.
func TestRemoteWindow(t *testing.T) {
	remote, local := brokenStore{}, memstore.New()
	cases := []struct {
		name string
		st   throttle.Store
		p    throttle.Policy
		ok   bool
	}{
		{"remote 2ms", remote, throttle.Policy{Name: "a", Window: 2 * time.Millisecond}, false},
		{"remote cooldown 1ms", remote, throttle.Policy{Name: "a", Mode: throttle.Cooldown, Window: time.Millisecond}, false},
		{"remote replay 2ms", remote, throttle.Policy{Name: "a", Mode: throttle.Replay, Window: 2 * time.Millisecond}, false},
		{"remote 3ms", remote, throttle.Policy{Name: "a", Window: 3 * time.Millisecond}, true},
		{"remote exclusive, 1ms window", remote, throttle.Policy{Name: "a", Mode: throttle.Exclusive, Window: time.Millisecond}, true},
		{"memory 1ms", local, throttle.Policy{Name: "a", Window: time.Millisecond}, true},
		{"memory quota 1ms", local, throttle.Policy{Name: "a", Mode: throttle.Quota, Limit: 1, Window: time.Millisecond}, true},
		{"memory, remote fallback", local, throttle.Policy{Name: "a", Window: time.Millisecond,
			WhenStoreFails: throttle.FailOver, Fallback: remote}, false},
		{"remote, memory fallback", remote, throttle.Policy{Name: "a", Window: time.Millisecond,
			WhenStoreFails: throttle.FailOver, Fallback: local}, false},
		{"memory, memory fallback", local, throttle.Policy{Name: "a", Window: time.Millisecond,
			WhenStoreFails: throttle.FailOver, Fallback: memstore.New()}, true},
	}
	for _, c := range cases {
		_, err := throttle.New(c.st, c.p)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && !errors.Is(err, throttle.ErrInvalid):
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		case !c.ok && !strings.Contains(err.Error(), "shorter than 3ms"):
			t.Errorf("%s: err = %v does not say why", c.name, err)
		}
	}
}
