package main

import (
	"fmt"
	"time"
)

// printTable prints the cells of one concurrency: per row, the range over
// the passes of its throughput, its ratio to the baseline (row 0) in the
// same pass, its p50 and p99 latency, and its mean allocations per call.
func printTable(conc int, rows []row, cells [][]cell) {
	fmt.Printf("### %d concurrent caller%s\n\n", conc, plural(conc))
	fmt.Println("| what | ops/s | × raw SetNX | p50 | p99 | allocs/op |")
	fmt.Println("|---|---|---|---|---|---|")
	for i, r := range rows {
		var ops, ratio, p50, p99 span
		var allocs float64
		for pass, c := range cells[i] {
			ops.add(c.opsPerSec)
			ratio.add(c.opsPerSec / cells[0][pass].opsPerSec)
			p50.add(float64(c.p50))
			p99.add(float64(c.p99))
			allocs += c.allocs
		}
		allocs /= float64(len(cells[i]))
		fmt.Printf("| %s | %s | %s | %s | %s | %.1f |\n", r.name,
			ops.format(func(v float64) string { return fmt.Sprintf("%.0fk", v/1000) }),
			ratio.format(func(v float64) string { return fmt.Sprintf("%.2f", v) }),
			p50.format(dur), p99.format(dur), allocs)
	}
	fmt.Println()
}

// span is the range of a figure over the passes.
type span struct {
	lo, hi float64
	n      int
}

func (s *span) add(v float64) {
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	if s.n == 0 || v > s.hi {
		s.hi = v
	}
	s.n++
}

// format prints the range as "lo–hi", or one value when both print alike.
func (s span) format(f func(float64) string) string {
	lo, hi := f(s.lo), f(s.hi)
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}

// dur prints nanoseconds as a rounded duration.
func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d >= time.Microsecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%dns", d)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
