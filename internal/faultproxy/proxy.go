// Package faultproxy is a loopback TCP proxy that injects network faults
// between a client and a real server in tests.
//
// The stores in this module are tested against a real redis-server
// (internal/redistest), never a mock. Stopping or killing that server covers
// "Redis is down", but not the faults that decide whether a lock is safe:
// a slow network, a server that hangs without closing anything, a command
// that ran although its reply never arrived, connections reset mid-call.
// A test puts a Proxy in front of the server, points the client under test
// at Proxy.Addr and switches those faults on and off while connections are
// open.
//
// The proxy does not parse the protocol: faults act on the chunks of bytes
// it reads from one socket and writes to the other. Every fault applies at
// once to open connections as well as new ones, and can be cleared at any
// time; Clear removes them all.
package faultproxy

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dialTimeout bounds how long the proxy waits to connect to the target for
// each accepted connection; Close interrupts it.
const dialTimeout = 5 * time.Second

// Proxy forwards every connection accepted on Addr to the target address,
// applying the faults currently set. Its methods are safe for concurrent
// use, including while connections are forwarding.
type Proxy struct {
	ln     net.Listener
	target string
	ctx    context.Context // cancelled by Close, ending pending dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started

	mu      sync.Mutex
	closed  bool
	links   map[*link]struct{}
	resetN  uint64 // ResetAll calls so far; see handle
	f       faults
	changed chan struct{} // closed and replaced whenever f changes

	// beforeLink, when set (by tests of this package), runs in handle
	// between the dial to the target and the link's registration.
	beforeLink func()

	accepted, refused, resets       atomic.Int64
	clientBytes, serverBytes, drops atomic.Int64
}

// faults is the fault state; the zero value forwards everything at once.
type faults struct {
	toServer, toClient time.Duration
	blackHole          bool
	refuse             bool
	dropReplies        bool
	resetOnReply       bool // one-shot, see ResetOnNextReply
}

// Stats counts what the proxy has seen since Start. Tests use it to learn
// that a command has reached the proxy (ClientBytes grew) or that the server
// answered (ServerBytes grew) before they inject the next fault.
type Stats struct {
	Accepted     int64 // connections accepted, including refused ones
	Refused      int64 // connections reset at once because of SetRefuse
	Resets       int64 // connections reset by ResetAll or ResetOnNextReply
	Open         int64 // connections currently forwarding
	ClientBytes  int64 // bytes read from clients (forwarded or still held)
	ServerBytes  int64 // bytes read from the server (forwarded, held or dropped)
	DroppedBytes int64 // server bytes discarded by SetDropReplies or ResetOnNextReply
}

// Start listens on 127.0.0.1 on a free port and forwards each accepted
// connection to target (host:port), with no fault set. t.Cleanup closes
// the proxy; call Start after starting the server and before making the
// clients, so that cleanups, which run in reverse, close the clients, then
// the proxy, then the server.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln:      ln,
		target:  target,
		ctx:     ctx,
		cancel:  cancel,
		links:   make(map[*link]struct{}),
		changed: make(chan struct{}),
	}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's "127.0.0.1:port" address, for the client under test.
// It stays the same for the proxy's life, whatever the faults.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening, closes every connection (bytes held by a black
// hole are dropped) and waits until every goroutine the proxy started has
// returned, so that leak checks pass. It is called at the test's cleanup;
// calling it earlier, or more than once, is allowed.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	links := p.snapshotLocked()
	p.mu.Unlock()
	_ = p.ln.Close()
	p.cancel()
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
}

// SetLatency delays every chunk forwarded towards the server by toServer
// and every chunk towards the client by toClient, so that a request and
// its reply take at least toServer+toClient longer. A chunk takes the
// delay in force when it was read; chunks on one connection are delayed
// one after the other, in order. Zero (or negative) removes the delay.
func (p *Proxy) SetLatency(toServer, toClient time.Duration) {
	p.update(func(f *faults) { f.toServer, f.toClient = max(toServer, 0), max(toClient, 0) })
}

// SetBlackHole makes the network silent, as with a hung server or a
// partition that drops packets: connections are still accepted and kept
// open, but nothing is forwarded in either direction, so clients wait
// until their deadline. The bytes are held, not lost: when the black hole
// is cleared they are delivered late, in order, as a server that wakes up
// would execute the commands sent to it meanwhile, including those whose
// callers have since given up. (Close drops them.)
func (p *Proxy) SetBlackHole(on bool) {
	p.update(func(f *faults) { f.blackHole = on })
}

// SetDropReplies forwards every byte from clients to the server but
// discards every byte from the server, for open and new connections: the
// command runs, the client never learns and ends at its deadline. This is
// the ambiguous outcome a store must survive. A client should drop a
// connection on which a reply went missing (go-redis does after a
// timeout); one that keeps it would read the next reply as the answer to
// the lost command.
func (p *Proxy) SetDropReplies(on bool) {
	p.update(func(f *faults) { f.dropReplies = on })
}

// ResetOnNextReply arms a one-shot fault: the next chunk the server sends,
// on any connection, is discarded and that connection is reset (RST). The
// client then gets a connection error, not a timeout, although the command
// ran. Arm it on a connection the client has already used: a new go-redis
// connection first sends its own handshake, whose reply would trigger the
// fault. Clear disarms it.
func (p *Proxy) ResetOnNextReply() {
	p.update(func(f *faults) { f.resetOnReply = true })
}

// SetRefuse makes the proxy reset every new connection as soon as it is
// accepted, as a host with nothing listening or a full accept queue would
// (the client's first read or write fails with a connection error).
// Connections already open keep working. The port stays bound, so the
// address cannot be taken by another process meanwhile. To get a refused
// dial (ECONNREFUSED) instead, stop the server behind the proxy.
func (p *Proxy) SetRefuse(on bool) {
	p.update(func(f *faults) { f.refuse = on })
}

// ResetAll resets every open connection (SO_LINGER 0, then close, so the
// peers get an RST), as a crashed middlebox or a failover would; a call in
// flight fails with a connection error. New connections are accepted as
// usual. It returns how many connections it reset.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	p.resetN++
	links := p.snapshotLocked()
	p.mu.Unlock()
	n := 0
	for _, l := range links {
		if l.close(true) {
			p.resets.Add(1)
			n++
		}
	}
	return n
}

// Clear removes every fault (latency, black hole, dropped replies, refusal
// and an armed ResetOnNextReply). Bytes held by a black hole are delivered.
func (p *Proxy) Clear() {
	p.update(func(f *faults) { *f = faults{} })
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	open := int64(len(p.links))
	p.mu.Unlock()
	return Stats{
		Accepted:     p.accepted.Load(),
		Refused:      p.refused.Load(),
		Resets:       p.resets.Load(),
		Open:         open,
		ClientBytes:  p.clientBytes.Load(),
		ServerBytes:  p.serverBytes.Load(),
		DroppedBytes: p.drops.Load(),
	}
}

// update changes the faults and wakes the chunks waiting in a black hole.
func (p *Proxy) update(change func(*faults)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change(&p.f)
	close(p.changed)
	p.changed = make(chan struct{})
}

// state returns the faults and a channel closed at their next change.
func (p *Proxy) state() (faults, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.f, p.changed
}

func (p *Proxy) snapshotLocked() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

// serve accepts connections until Close.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like
			continue
		}
		p.accepted.Add(1)
		p.mu.Lock()
		closed, refuse, gen := p.closed, p.f.refuse, p.resetN
		if !closed && !refuse {
			p.wg.Add(1) // under mu, so never after Close's Wait began
		}
		p.mu.Unlock()
		if closed || refuse {
			if refuse {
				p.refused.Add(1)
			}
			reset(c)
			continue
		}
		go p.handle(c, gen)
	}
}

// handle connects client to the target and forwards both ways until either
// side closes or the link is reset. gen is the count of ResetAll calls when
// client was accepted: a connection accepted before a ResetAll (or a
// SetRefuse) but not yet registered when it ran is reset here, so that no
// connection escapes a fault by being in the middle of its dial.
func (p *Proxy) handle(client net.Conn, gen uint64) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// Nothing to forward to: the client sees its connection closed.
		_ = client.Close()
		return
	}
	l := &link{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	hook := p.beforeLink
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	p.mu.Lock()
	if p.closed || p.f.refuse || p.resetN != gen {
		closed := p.closed
		p.mu.Unlock()
		if l.close(!closed) && !closed {
			p.resets.Add(1)
		}
		return
	}
	p.links[l] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()

	upDone := make(chan struct{})
	go func() {
		defer p.wg.Done()
		defer close(upDone)
		p.pump(l, true)
	}()
	p.pump(l, false)
	<-upDone
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// pump copies one direction of l (client to server when up) chunk by
// chunk, applying the faults, and closes l when either socket fails.
func (p *Proxy) pump(l *link, up bool) {
	defer l.close(false)
	src, dst, count := l.server, l.client, &p.serverBytes
	if up {
		src, dst, count = l.client, l.server, &p.clientBytes
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			count.Add(int64(n))
			if !p.forward(l, dst, buf[:n], up) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward applies latency, then the black hole, then (towards the client)
// dropping, and writes b to dst. It reports false when the link is done.
func (p *Proxy) forward(l *link, dst net.Conn, b []byte, up bool) bool {
	f, _ := p.state()
	delay := f.toClient
	if up {
		delay = f.toServer
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.done:
			t.Stop()
			return false
		}
	}
	for {
		f, changed := p.state()
		if !f.blackHole {
			break
		}
		select {
		case <-changed:
		case <-l.done:
			return false
		}
	}
	if !up {
		p.mu.Lock()
		drop, reset := p.f.dropReplies, p.f.resetOnReply
		p.f.resetOnReply = false
		p.mu.Unlock()
		if reset {
			p.drops.Add(int64(len(b)))
			if l.close(true) {
				p.resets.Add(1)
			}
			return false
		}
		if drop {
			p.drops.Add(int64(len(b)))
			return true
		}
	}
	_, err := dst.Write(b)
	return err == nil
}

// link is one proxied connection: the client's socket and ours to the
// server. done is closed when the link is closed.
type link struct {
	client, server net.Conn
	done           chan struct{}
	once           sync.Once
}

// close closes both sockets, with an RST if reset, and reports whether
// this call closed the link (false if it was already closed).
func (l *link) close(reset bool) bool {
	closed := false
	l.once.Do(func() {
		closed = true
		close(l.done)
		if reset {
			setLingerZero(l.client)
			setLingerZero(l.server)
		}
		_ = l.client.Close()
		_ = l.server.Close()
	})
	return closed
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	setLingerZero(c)
	_ = c.Close()
}

func setLingerZero(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}
