package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// A phase is one rate of arrivals, a multiple of capacity, for a while.
type phase struct {
	name string
	load float64 // × capacity
	d    time.Duration
}

// An answer is what one request got.
type answer struct {
	phase   int
	at      time.Duration // its scheduled arrival, since its phase began
	latency time.Duration // from its scheduled arrival to the end of its body
	status  int           // 0: no answer (the client gave up, or the connection failed)
}

// drive sends GET url open loop: the phases one after the other, each
// request at its scheduled time on a goroutine of its own, never waiting
// for an earlier answer. Each client gives up after timeout. It returns
// every answer once the last request has ended, and when the phases
// began.
func drive(client *http.Client, url string, phases []phase, timeout time.Duration) ([]answer, []time.Time) {
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
		starts  []time.Time
	)
	for pi, ph := range phases {
		rate := ph.load * capacity
		n := int(rate * ph.d.Seconds())
		every := time.Duration(float64(time.Second) / rate)
		start := time.Now()
		starts = append(starts, start)
		for i := range n {
			at := start.Add(time.Duration(i) * every)
			if wait := time.Until(at); wait > 0 {
				time.Sleep(wait)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := one(client, url, at, timeout)
				a.phase, a.at = pi, at.Sub(start)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}()
		}
		if wait := time.Until(start.Add(ph.d)); wait > 0 {
			time.Sleep(wait)
		}
	}
	wg.Wait()
	return answers, starts
}

// one sends one request scheduled at at.
func one(client *http.Client, url string, at time.Time, timeout time.Duration) answer {
	ctx, cancel := context.WithDeadline(context.Background(), at.Add(timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{latency: time.Since(at)}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	a := answer{latency: time.Since(at), status: resp.StatusCode}
	if err != nil {
		a.status = 0
	}
	return a
}

// limits are samples of a case's limit, taken every period from start
// until stop is called.
type limits struct {
	at   []time.Time
	val  []int
	stop func()
}

func sampleLimit(limit func() int, period time.Duration) *limits {
	l := &limits{}
	quit, done := make(chan struct{}), make(chan struct{})
	l.stop = func() { close(quit); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				l.at = append(l.at, now)
				l.val = append(l.val, limit())
			}
		}
	}()
	return l
}
