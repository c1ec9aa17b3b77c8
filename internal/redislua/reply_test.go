package redislua_test

import (
	"math"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestMillis(t *testing.T) {
	cases := map[time.Duration]int64{
		time.Nanosecond:                  1,
		time.Millisecond:                 1,
		time.Millisecond + 1:             2,
		1500 * time.Microsecond:          2,
		time.Minute:                      60000,
		time.Duration(math.MaxInt64):     int64(redislua.TTLCeiling / time.Millisecond),
		redislua.TTLCeiling:              int64(redislua.TTLCeiling / time.Millisecond),
		redislua.TTLCeiling - 1:          int64(redislua.TTLCeiling / time.Millisecond),
		redislua.TTLCeiling + 1:          int64(redislua.TTLCeiling / time.Millisecond),
		time.Duration(math.MaxInt64 - 1): int64(redislua.TTLCeiling / time.Millisecond),
	}
	for d, want := range cases {
		if got := redislua.Millis(d); got != want {
			t.Errorf("Millis(%d) = %d, want %d", d, got, want)
		}
	}
}

func TestRemaining(t *testing.T) {
	cases := map[int64]time.Duration{
		-1:            -1,
		-2:            time.Millisecond,
		0:             time.Millisecond,
		1:             time.Millisecond,
		2500:          2500 * time.Millisecond,
		math.MaxInt64: redislua.TTLCeiling,
	}
	for ms, want := range cases {
		if got := redislua.Remaining(ms); got != want {
			t.Errorf("Remaining(%d) = %v, want %v", ms, got, want)
		}
	}
}

func TestOutcome(t *testing.T) {
	for n, want := range map[int64]store.Outcome{1: store.OK, 2: store.HeldByOther, 3: store.Gone} {
		for _, release := range []bool{false, true} {
			if got, ok := redislua.Outcome(n, release); !ok || got != want {
				t.Errorf("Outcome(%d, %v) = %v, %v", n, release, got, ok)
			}
		}
	}
	if got, ok := redislua.Outcome(4, true); !ok || got != store.StillHeld {
		t.Errorf("Outcome(4, release) = %v, %v", got, ok)
	}
	for _, n := range []int64{4, 0, 5, -1} {
		if _, ok := redislua.Outcome(n, false); ok {
			t.Errorf("Outcome(%d) accepted for extend or record", n)
		}
	}
}

// TestDecision decodes both signs of the GCRA reply for a quota of 4 per
// second with burst 4 (T = 250 ms, tolerance 1 s).
func TestDecision(t *testing.T) {
	const T = 250000 // µs
	// Allowed, the TAT 500 ms ahead: two of four used.
	d := redislua.Decision(500000, T, 4, 1)
	if !d.Allowed || d.Remaining != 2 || d.ResetAfter != 500*time.Millisecond || d.RetryAfter != 0 {
		t.Fatalf("allowed: %+v", d)
	}
	// Refused with the quota empty (reset 1 s): one more fits in T.
	d = redislua.Decision(-(1000000 + 1), T, 4, 1)
	if d.Allowed || d.Remaining != 0 || d.ResetAfter != time.Second || d.RetryAfter != 250*time.Millisecond {
		t.Fatalf("refused: %+v", d)
	}
	// A refused cost of 3 with one left waits for two intervals.
	d = redislua.Decision(-(750000 + 1), T, 4, 3)
	if d.Allowed || d.Remaining != 1 || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("refused cost 3: %+v", d)
	}
}

// TestNewGCRACall: a whole-millisecond interval goes to GCRAMillis with
// its arguments in milliseconds, any other to GCRA in microseconds; the
// test clock follows the script's unit.
func TestNewGCRACall(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6789000, time.UTC)
	clock := func() time.Time { return at }
	for _, c := range []struct {
		r    store.Rate
		now  func() time.Time
		want redislua.GCRACall
	}{
		{store.Rate{Limit: 10, Window: time.Minute, Burst: 10}, nil, redislua.GCRACall{T: 6e6, Millis: true, Interval: 6000}},
		{store.Rate{Limit: 10, Window: time.Minute, Burst: 10}, clock, redislua.GCRACall{T: 6e6, Millis: true, Interval: 6000, Now: at.UnixMilli()}},
		{store.Rate{Limit: 3, Window: time.Second, Burst: 3}, clock, redislua.GCRACall{T: 333333, Interval: 333333, Now: at.UnixMicro()}},
	} {
		if got := redislua.NewGCRACall(c.r, c.now); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.r, got, c.want)
		}
	}
}
