package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestBeginWrites checks that begin answers a request turned away
// for its held key or spent quota exactly as Write answers beginN's
// rejection of the same request (status, every header field, body), with
// one allocation fewer; that it leaves every other outcome to the caller
// as beginN does; and that it writes nothing under a dry run or with a nil
// writer.
func TestBeginWrites(t *testing.T) {
	ctx := context.Background()
	policies := []throttle.Policy{
		{Name: "submit", Window: 5 * time.Second},
		{Name: "jobs", Mode: throttle.Exclusive},
		{Name: "search", Mode: throttle.Quota, Limit: 1, Window: time.Minute},
		{Name: "submit", Window: 5 * time.Second, Observer: &observed{}}, // with a lease
	}
	for _, p := range policies {
		t.Run(p.Name+"/"+p.Mode.String(), func(t *testing.T) {
			clock := time.Now()
			l, err := throttle.New(memstore.New(memstore.WithClock(func() time.Time { return clock })), p)
			if err != nil {
				t.Fatal(err)
			}
			g := New(l)
			_, first, rej, written := g.begin(ctx, "u", 1, "", httptest.NewRecorder())
			if rej != nil || written {
				t.Fatalf("first request: %+v, written %v; want admitted", rej, written)
			}
			defer first.finish(ctx, http.StatusOK, false)

			want := httptest.NewRecorder()
			_, _, rej = g.beginN(ctx, "u", 1)
			if rej == nil {
				t.Fatal("beginN admitted a duplicate")
			}
			Write(want, rej)
			got := httptest.NewRecorder()
			_, _, rej, written = g.begin(ctx, "u", 1, "", got)
			if rej != nil || !written {
				t.Fatalf("begin of a duplicate: %+v, written %v; want written", rej, written)
			}
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Fatalf("begin wrote %d %q, Write %d %q", got.Code, got.Body, want.Code, want.Body)
			}
			for k, v := range want.Header() {
				if g := got.Header().Values(k); len(g) != len(v) || g[0] != v[0] {
					t.Fatalf("field %s: begin wrote %q, Write %q", k, g, v)
				}
			}
			if len(got.Header()) != len(want.Header()) {
				t.Fatalf("begin wrote fields %v, Write %v", got.Header(), want.Header())
			}

			if _, _, rej, written = g.begin(ctx, "u", 1, "", nil); rej == nil || written {
				t.Fatalf("with a nil writer: %+v, written %v; want the rejection returned", rej, written)
			}
			if p.Mode != throttle.Quota && p.Observer == nil {
				allocs := func(f func()) float64 { return testing.AllocsPerRun(100, f) }
				withRej := allocs(func() { g.beginN(ctx, "u", 1) })
				w := &discardWriter{h: http.Header{}}
				written := allocs(func() { clear(w.h); g.begin(ctx, "u", 1, "", w) })
				if written != withRej-1 {
					t.Fatalf("a duplicate answered by begin: %v allocations, beginN %v; want one fewer", written, withRej)
				}
			}
		})
	}
	t.Run("dry run", func(t *testing.T) {
		l, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		g := New(l)
		_, first, _, _ := g.begin(ctx, "u", 1, "", httptest.NewRecorder())
		defer first.finish(ctx, http.StatusOK, false)
		w := httptest.NewRecorder()
		_, second, rej, written := g.begin(ctx, "u", 1, "", w)
		if rej != nil || written || w.Body.Len() != 0 {
			t.Fatalf("a dry run's duplicate: %+v, written %v, body %q; want let through, nothing written", rej, written, w.Body)
		}
		second.finish(ctx, http.StatusOK, false)
	})
}

// discardWriter is an http.ResponseWriter that keeps only its header.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header       { return w.h }
func (*discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (*discardWriter) WriteHeader(int)             {}
