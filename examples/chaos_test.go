package examples_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
)

// chaosWindow is the examples' window in the chaos run: bursts of a user
// are spaced by more than that, so every burst finds the user's key free.
const chaosWindow = time.Second

// chaosTally counts what one fail mode did during the chaos run.
type chaosTally struct {
	bursts    int // bursts of duplicates sent
	doubles   int // bursts of which more than one copy was admitted in the window
	extra     int // admissions beyond the first, summed over those bursts
	admitted  int // copies admitted (2xx)
	rejected  int // copies turned away as duplicates (429)
	refused   int // copies refused because the store failed (503)
	errors    int // copies with a transport error or another status
	faultsRun []string
}

// TestChaos runs the three examples (net/http, gin, echo) against one Redis
// while it is paused (SIGSTOP), resumed, killed and restarted empty, with
// many users sending bursts of concurrent duplicate submissions to all three
// processes, once per -fail mode. It counts double admissions (bursts of
// which two or more copies were admitted within the window) and prints the
// table. FailClosed must admit no duplicate: a request the store cannot
// decide is refused. FailOpen and FailOver let duplicates through during the
// outage by design; their figures are what the README states.
func TestChaos(t *testing.T) {
	skipUnlessProcesses(t)
	if testing.Short() {
		t.Skip("the chaos run takes about half a minute")
	}
	modes := []string{"closed", "open", "over"}
	tallies := map[string]*chaosTally{}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			tallies[mode] = chaosRun(t, mode)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-7s %7s %8s %6s %9s %9s %8s %7s\n", "-fail", "bursts", "doubles", "extra", "admitted", "rejected", "refused", "errors")
	for _, mode := range modes {
		c := tallies[mode]
		if c == nil {
			continue
		}
		fmt.Fprintf(&b, "%-7s %7d %8d %6d %9d %9d %8d %7d\n", mode, c.bursts, c.doubles, c.extra, c.admitted, c.rejected, c.refused, c.errors)
	}
	t.Log(b.String())
	if c := tallies["closed"]; c != nil && c.doubles != 0 {
		t.Errorf("FailClosed admitted duplicates in %d of %d bursts; it must admit none", c.doubles, c.bursts)
	}
}

// chaosRun runs one -fail mode: three examples on one Redis, a schedule of
// faults, and users sending bursts until the schedule ends.
func chaosRun(t *testing.T, mode string) *chaosTally {
	srv := redistest.Start(t)
	args := []string{"-redis", srv.Addr, "-window", chaosWindow.String(), "-fail", mode}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...)}
	c := newClient(t)
	for _, a := range apps {
		healthz(t, c, a)
	}

	tally := &chaosTally{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var users sync.WaitGroup
	const nUsers, copies = 24, 6
	for u := range nUsers {
		users.Go(func() {
			// Stagger the users so that bursts land throughout the
			// schedule, not all at the same instants.
			time.Sleep(time.Duration(u) * chaosWindow / nUsers)
			for burst := 0; ; burst++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-u%d-b%d", mode, u, burst)
				rs := sendBurst(c, apps, id, copies)
				mu.Lock()
				tally.add(rs)
				mu.Unlock()
				time.Sleep(chaosWindow + 300*time.Millisecond)
			}
		})
	}

	// The fault schedule: each step lasts long enough for bursts to land in
	// it. Restart comes back with no data, as a Redis without persistence
	// does: locks held before the kill are gone.
	step := func(name string, f func(), d time.Duration) {
		if f != nil {
			f()
		}
		tally.faultsRun = append(tally.faultsRun, name)
		time.Sleep(d)
	}
	step("healthy", nil, 1500*time.Millisecond)
	step("paused", func() { srv.Pause(t) }, 1500*time.Millisecond)
	step("resumed", func() { srv.Resume(t) }, 1500*time.Millisecond)
	step("killed", func() { srv.Kill(t) }, 1500*time.Millisecond)
	step("restarted", func() { srv.Restart(t) }, 1500*time.Millisecond)
	step("paused again", func() { srv.Pause(t) }, time.Second)
	step("resumed again", func() { srv.Resume(t) }, 2*time.Second)
	close(stop)
	users.Wait()
	for _, a := range apps {
		healthz(t, c, a)
	}
	return tally
}

// sendBurst sends copies of one submission at once, spread over the apps.
func sendBurst(c *http.Client, apps []*app, user string, copies int) []reply {
	rs := make([]reply, copies)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() {
			<-gate
			rs[i] = submit(c, apps[i%len(apps)], user)
		})
	}
	close(gate)
	wg.Wait()
	return rs
}

// add counts one burst. Copies answered after the first was sent plus the
// window may be admitted again legitimately and are not counted as doubles.
func (c *chaosTally) add(rs []reply) {
	c.bursts++
	first := rs[0].start
	for _, r := range rs {
		if r.start.Before(first) {
			first = r.start
		}
	}
	wins := 0
	for _, r := range rs {
		switch {
		case r.err != nil:
			c.errors++
		case r.status/100 == 2:
			c.admitted++
			if r.end.Before(first.Add(chaosWindow)) {
				wins++
			}
		case r.status == http.StatusTooManyRequests:
			c.rejected++
		case r.status == http.StatusServiceUnavailable:
			c.refused++
		default:
			c.errors++
		}
	}
	if wins > 1 {
		c.doubles++
		c.extra += wins - 1
	}
}
