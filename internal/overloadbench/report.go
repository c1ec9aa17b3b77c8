package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// printTables writes the tables.
func printTables(results []result, phases []phase, p50, p99 time.Duration) {
	good := 10 * p50
	for pi, ph := range phases {
		fmt.Printf("### %s (%.0f requests a second for %v)\n\n", ph.name, ph.load*capacity, ph.d)
		fmt.Println("| case | goodput, % of capacity (completed in the phase's steady part) | by arrival (old column) | p99 of 200s | × unloaded p99 | 200s | shed (503/429) | gave up |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range results {
			s := summarize(r.answers, pi, good)
			fmt.Printf("| %s | %.1f%% | %.1f%% | %s | %.2f× | %d | %d | %d |\n", r.c.name, 100*steadyGoodput(r, pi, ph.d, good),
				100*float64(s.good)/ph.d.Seconds()/capacity, ms(s.p99), float64(s.p99)/float64(p99), s.ok, s.shed, s.none)
		}
		fmt.Println()
	}
	fmt.Println("### The limit: unloaded (median of the second half of the first 0.8× phase), under overload (median, and the lowest sampled in the steady part: a probe of throttle's base latency halves it), and the time after the overload ends until it is back within 10% of the unloaded value for a second")
	fmt.Println()
	fmt.Println("| case | unloaded | under 2× (lowest) | back after 2× | under 5× (lowest) | back after 5× |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.limits == nil || len(r.starts) < 5 {
			continue
		}
		l := r.limits
		unloaded := l.median(r.starts[0].Add(phases[0].d/2), r.starts[1])
		fmt.Printf("| %s | %.0f | %.0f (%d) | %s | %.0f (%d) | %s |\n", r.c.name, unloaded,
			l.median(r.starts[1], r.starts[2]), l.lowest(r.starts[1].Add(time.Second), r.starts[2]),
			l.back(r.starts[2], r.starts[3], unloaded),
			l.median(r.starts[3], r.starts[4]), l.lowest(r.starts[3].Add(time.Second), r.starts[4]),
			l.back(r.starts[4], r.starts[4].Add(phases[4].d), unloaded))
	}
	fmt.Println()
	for _, c := range results {
		fmt.Printf("- %s: %s\n", c.c.name, c.c.notes)
	}
	fmt.Println()
	printTargets(results, phases, good, p99)
}

// printTargets checks issue 39's targets on throttle's row: at 2× and 5×,
// goodput at least 90% of capacity and a p99 within 3× the unloaded p99,
// both ahead of failsafe-go's; at 0.8×, nothing shed.
func printTargets(results []result, phases []phase, good, p99 time.Duration) {
	var ours, theirs *result
	for i := range results {
		switch results[i].c.name {
		case "throttle":
			ours = &results[i]
		case "failsafe-go":
			theirs = &results[i]
		}
	}
	if ours == nil {
		return
	}
	check := func(ok bool, what string, args ...any) {
		mark := "met"
		if !ok {
			mark = "MISSED"
		}
		fmt.Printf("- %s: "+what+"\n", append([]any{mark}, args...)...)
	}
	s := summarize(ours.answers, 0, good)
	check(s.shed == 0, "0.8×: %d shed", s.shed)
	for pi, ph := range phases {
		if ph.load < 2 {
			continue
		}
		s := summarize(ours.answers, pi, good)
		goodput := steadyGoodput(*ours, pi, ph.d, good)
		check(goodput >= 0.9, "%s: goodput %.1f%% of capacity (at least 90%%)", ph.name, 100*goodput)
		check(s.p99 <= 3*p99, "%s: p99 %s (at most 3× the unloaded %s)", ph.name, ms(s.p99), ms(p99))
		if theirs != nil {
			t := summarize(theirs.answers, pi, good)
			tg := steadyGoodput(*theirs, pi, ph.d, good)
			check(goodput > tg && s.p99 < t.p99,
				"%s: ahead of failsafe-go (goodput %.2f%% > %.2f%%, %d against %d good answers; p99 %s < %s)",
				ph.name, 100*goodput, 100*tg, steadyGood(*ours, pi, ph.d, good), steadyGood(*theirs, pi, ph.d, good),
				ms(s.p99), ms(t.p99))
		}
	}
}

// A summary is one phase of one case.
type summary struct {
	ok, good, shed, none int
	p99                  time.Duration
}

func summarize(answers []answer, phase int, good time.Duration) summary {
	var s summary
	for _, a := range answers {
		if a.phase != phase {
			continue
		}
		switch a.status {
		case 200:
			s.ok++
			if a.latency <= good {
				s.good++
			}
		case 0:
			s.none++
		default:
			s.shed++
		}
	}
	s.p99 = quantile(latencies(answers, phase), 0.99)
	return s
}

// settle is how long after a phase begins its steady part starts: the
// requests in flight and queued at the end of the phase before are served
// by then, under any guard that answers within the client's timeout.
const settle = time.Second

// steadyGoodput returns the good answers (200s within good of their
// arrival) that r's guard completed in the steady part of phase, [its
// start + settle, its end], whatever phase they arrived in, per second of
// that window, as a share of capacity: the rate at which the service
// answered usefully while the load held. Counting by arrival instead
// credits a guard that keeps a standing queue with the backlog it
// answers after the phase ended, over 100% of capacity on short phases.
func steadyGoodput(r result, phase int, d, good time.Duration) float64 {
	from, to := steady(r, phase, d)
	return float64(steadyGood(r, phase, d, good)) / to.Sub(from).Seconds() / capacity
}

// steady is the steady part of r's phase of length d.
func steady(r result, phase int, d time.Duration) (from, to time.Time) {
	return r.starts[phase].Add(min(settle, d/2)), r.starts[phase].Add(d)
}

// steadyGood counts the good answers completed in the steady part of r's
// phase of length d, whatever phase they arrived in.
func steadyGood(r result, phase int, d, good time.Duration) int {
	from, to := steady(r, phase, d)
	n := 0
	for _, a := range r.answers {
		if a.status != 200 || a.latency > good {
			continue
		}
		if done := r.starts[a.phase].Add(a.at + a.latency); !done.Before(from) && !done.After(to) {
			n++
		}
	}
	return n
}

// latencies returns the sorted latencies of the 200s of phase.
func latencies(answers []answer, phase int) []time.Duration {
	var out []time.Duration
	for _, a := range answers {
		if a.phase == phase && a.status == 200 {
			out = append(out, a.latency)
		}
	}
	slices.Sort(out)
	return out
}

// quantile returns the q quantile of sorted s (nearest rank), 0 for none.
func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

// median returns the median of the samples taken in [from, to).
func (l *limits) median(from, to time.Time) float64 {
	var v []int
	for i, at := range l.at {
		if !at.Before(from) && at.Before(to) {
			v = append(v, l.val[i])
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return float64(v[len(v)/2])
}

// lowest returns the lowest of the samples taken in [from, to), or 0.
func (l *limits) lowest(from, to time.Time) int {
	low := 0
	for i, at := range l.at {
		if !at.Before(from) && at.Before(to) && (low == 0 || l.val[i] < low) {
			low = l.val[i]
		}
	}
	return low
}

// back returns how long after from the limit came within 10% of want and
// stayed there for a second, before to.
func (l *limits) back(from, to time.Time, want float64) string {
	var since time.Time
	for i, at := range l.at {
		if at.Before(from) || !at.Before(to) {
			continue
		}
		if math.Abs(float64(l.val[i])-want) > 0.1*want {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = at
		}
		if at.Sub(since) >= time.Second {
			return ms(since.Sub(from))
		}
	}
	return "not within " + ms(to.Sub(from))
}

// ms formats d in milliseconds, or seconds from 10 s.
func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
