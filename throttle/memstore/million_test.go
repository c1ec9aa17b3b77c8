package memstore

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
)

// floodScale returns the store and the number of distinct clients for a
// flood of n at the default bound: as given, or, under -race or -short, an
// eighth of both (the same fill of each shard).
func floodScale(t *testing.T, n int) (*Store, int) {
	if raced || testing.Short() {
		t.Logf("scaled to 1/8: -race or -short")
		return New(WithMaxKeys(defaultMaxKeys / 8)), n / 8
	}
	return New(), n
}

// peakRSS returns the process's peak resident set (VmHWM) in MiB, or -1.
func peakRSS() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb >> 10
		}
	}
	return -1
}

// TestMillionClients (issue 36): 1,000,000 distinct clients, each once, on
// one Cooldown lock of the default store at its default bound: every one is
// held (none let through unguarded), counted in Stats, and a second request
// of any of them is refused. Before, a policy could hold half the bound:
// 475,712 failed open.
func TestMillionClients(t *testing.T) {
	s, n := floodScale(t, 1_000_000)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "signup", Mode: throttle.Cooldown, TTL: time.Hour})
	require.NoError(t, err)
	before, start := peakRSS(), time.Now()
	for i := range n {
		lease, err := l.Admit(bg, strconv.Itoa(i))
		if err != nil || lease == nil {
			require.FailNow(t, "a client not held", "client %d of %d: %v, %+v", i, n, err, l.Stats())
		}
	}
	t.Logf("%d clients in %v; peak RSS %d MiB (%d MiB before); Len %d", n, time.Since(start).Round(time.Millisecond), peakRSS(), before, s.Len())
	require.Equal(t, throttle.Stats{Acquired: uint64(n)}, l.Stats())
	for _, i := range []int{0, n / 2, n - 1} {
		_, err := l.Admit(bg, strconv.Itoa(i))
		require.ErrorIs(t, err, throttle.ErrContended, "client %d again", i)
	}
}
