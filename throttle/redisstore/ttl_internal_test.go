package redisstore

import (
	"math"
	"testing"
	"time"
)

// TestMillisSaturates: rounding a TTL up to whole milliseconds never
// overflows into a negative PX or PEXPIRE (which Redis refuses, or for
// PEXPIRE takes as "delete the key now"), and a PTTL too long for a
// time.Duration does not wrap around.
func TestMillisSaturates(t *testing.T) {
	const maxMs = math.MaxInt64 / int64(time.Millisecond) // 9223372036854
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{
		{1, 1},
		{time.Millisecond - 1, 1},
		{time.Millisecond, 1},
		{time.Millisecond + 1, 2},
		{time.Hour, 3_600_000},
		{time.Duration(maxMs-1) * time.Millisecond, maxMs - 1},
		{time.Duration(maxMs-1)*time.Millisecond + 1, maxMs},
		{time.Duration(maxMs) * time.Millisecond, maxMs},
		// Above the last whole millisecond: rounding up would pass
		// math.MaxInt64.
		{time.Duration(maxMs)*time.Millisecond + 1, maxMs},
		{math.MaxInt64 - time.Millisecond + 2, maxMs},
		{math.MaxInt64 - 1, maxMs},
		{math.MaxInt64, maxMs},
	} {
		if got := millis(tc.d); got != tc.want {
			t.Errorf("millis(%d) = %d, want %d", int64(tc.d), got, tc.want)
		}
		if got := roundUp(tc.d); got <= 0 || got < min(tc.d, ttlCeiling) || int64(got)%int64(time.Millisecond) != 0 {
			t.Errorf("roundUp(%d) = %d: not a positive whole millisecond at least the input", int64(tc.d), int64(got))
		}
	}
	for _, tc := range []struct {
		pttl int64
		want time.Duration
	}{
		{-2, time.Millisecond},
		{-1, -1},
		{0, time.Millisecond},
		{1, time.Millisecond},
		{maxMs, time.Duration(maxMs) * time.Millisecond},
		{maxMs + 1, ttlCeiling},
		{1e15, ttlCeiling},
		{math.MaxInt64, ttlCeiling},
	} {
		if got := remaining(tc.pttl); got != tc.want {
			t.Errorf("remaining(%d) = %d, want %d", tc.pttl, int64(got), int64(tc.want))
		}
	}
}
