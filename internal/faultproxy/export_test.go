package faultproxy

// SetBeforeLink makes p call f in each connection's handler after it has
// dialled the target and before the connection is registered, so that a
// test can run a fault exactly in that gap.
func SetBeforeLink(p *Proxy, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.beforeLink = f
}
