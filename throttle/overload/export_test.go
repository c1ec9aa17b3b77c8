package overload

// Probing reports whether l is probing its base latency now: for
// BenchmarkProbeCost, which counts the slots that idle during probes.
func Probing(l *Limiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.a.probing
}
