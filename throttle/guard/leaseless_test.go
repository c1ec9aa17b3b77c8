package guard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// observed is an Observer that counts events, which also takes a Limiter
// off the leaseless path (see package admit).
type observed struct{ n int }

func (o *observed) Observe(context.Context, throttle.Event) { o.n++ }

// TestLeaselessTickets checks that a Dedupe or Cooldown request on an
// in-memory store is admitted without a lease (the fast path of package
// admit) and that it answers, releases and counts exactly as a request
// admitted with a lease does (the same policy with an Observer): every
// step's outcome and the Limiter's Stats are compared.
func TestLeaselessTickets(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown} {
		run := func(obs throttle.Observer) (steps []string, stats throttle.Stats) {
			p := throttle.Policy{Name: "submit", Mode: mode}
			if obs != nil {
				p.Observer = obs
			}
			l, err := throttle.New(memstore.New(), p)
			if err != nil {
				t.Fatal(err)
			}
			g := New(l)
			begin := func(id string) ticket {
				_, tk, rej := g.begin1(ctx, id)
				switch {
				case rej != nil:
					steps = append(steps, fmt.Sprintf("%s rejected %d", id, rej.Status))
				case obs == nil && (tk.lease != nil || !tk.hold.Held()):
					t.Fatalf("%v: admitted with lease %v, hold %+v: want no lease, a hold", mode, tk.lease, tk.hold)
				case obs != nil && (tk.lease == nil || tk.hold.Held()):
					t.Fatalf("%v with an Observer: admitted with lease %v, hold %+v: want a lease", mode, tk.lease, tk.hold)
				default:
					h := http.Header{}
					tk.setHeaders(h)
					steps = append(steps, fmt.Sprintf("%s admitted %v", id, h))
				}
				return tk
			}
			tk := begin("a")
			begin("a")
			tk.finish(ctx, http.StatusInternalServerError, false) // Dedupe frees a, Cooldown keeps it
			tk = begin("a")
			tk.finish(ctx, http.StatusOK, false)
			begin("a")
			tk = begin("b")
			tk.finish(ctx, 0, true) // a panic
			begin("b")
			return steps, l.Stats()
		}
		fast, fastStats := run(nil)
		slow, slowStats := run(&observed{})
		if fmt.Sprint(fast) != fmt.Sprint(slow) || fastStats != slowStats {
			t.Errorf("%v: leaseless\n%q\n%+v\nwith a lease\n%q\n%+v", mode, fast, fastStats, slow, slowStats)
		}
		if fastStats.Acquired == 0 || fastStats.Rejected == 0 {
			t.Errorf("%v: stats %+v: the script admits and rejects", mode, fastStats)
		}
	}
}

// TestLeaselessStoreFull checks the leaseless path's answer to a store
// error (a full memstore): failing open, a ticket that holds nothing;
// failing closed, 503.
func TestLeaselessStoreFull(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []throttle.FailMode{throttle.FailOpen, throttle.FailClosed} {
		l, err := throttle.New(memstore.New(memstore.WithMaxKeys(1)), throttle.Policy{Name: "submit", WhenStoreFails: fail,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		g := New(l)
		if _, tk, rej := g.begin1(ctx, "a"); rej != nil || !tk.hold.Held() {
			t.Fatalf("%v: first key: ticket %+v, rejection %+v", fail, tk, rej)
		}
		_, tk, rej := g.begin1(ctx, "b")
		switch {
		case fail == throttle.FailOpen && (rej != nil || tk.hold.Held() || tk.lease != nil):
			t.Errorf("full store failing open: ticket %+v, rejection %+v: want a ticket that holds nothing", tk, rej)
		case fail == throttle.FailClosed && (rej == nil || rej.Status != http.StatusServiceUnavailable):
			t.Errorf("full store failing closed: rejection %+v, want 503", rej)
		}
		if s := l.Stats(); s.StoreErrors != 1 {
			t.Errorf("%v: stats %+v, want 1 store error", fail, s)
		}
	}
}
