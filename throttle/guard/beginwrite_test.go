package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestBeginWrites checks that begin answers a request turned away for its
// held key or spent quota exactly as Write answers beginN's rejection of
// the same request (status, every header field, body), with one
// allocation fewer (measured for the locks without an Observer); that it
// leaves every other outcome to the caller as beginN does; and that it
// writes nothing under a dry run or with a nil writer.
func TestBeginWrites(t *testing.T) {
	ctx := context.Background()
	type newGuard func(st store.Store) (*Guard, error)
	lock := func(c throttle.LockConfig) newGuard {
		return func(st store.Store) (*Guard, error) {
			l, err := throttle.NewLock(st, c)
			if err != nil {
				return nil, err
			}
			return Lock(l), nil
		}
	}
	for _, c := range []struct {
		name  string
		quota bool
		obs   bool
		guard newGuard
	}{
		{"submit/dedupe", false, false, lock(throttle.LockConfig{Name: "submit", TTL: 5 * time.Second})},
		{"jobs/exclusive", false, false, lock(throttle.LockConfig{Name: "jobs", Mode: throttle.Exclusive})},
		{"search/quota", true, false, func(st store.Store) (*Guard, error) {
			q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
			if err != nil {
				return nil, err
			}
			return Quota(q, throttle.Rate{Limit: 1, Window: time.Minute}), nil
		}},
		{"submit/observed", false, true, lock(throttle.LockConfig{Name: "submit", TTL: 5 * time.Second,
			Options: throttle.Options{Observer: &observed{}}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := time.Now()
			g, err := c.guard(memstore.New(memstore.WithClock(func() time.Time { return clock })))
			require.NoError(t, err)
			_, first, rej, written := g.beginW(ctx, "u", httptest.NewRecorder())
			require.Nil(t, rej, "first request turned away")
			require.False(t, written, "first request written")
			defer first.finish(ctx, http.StatusOK, false)

			want := httptest.NewRecorder()
			_, _, rej = g.beginN(ctx, "u", 1)
			require.NotNil(t, rej, "beginN admitted a duplicate")
			rej.Write(want)
			got := httptest.NewRecorder()
			_, _, rej, written = g.beginW(ctx, "u", got)
			require.Nil(t, rej, "begin of a duplicate returned its rejection")
			require.True(t, written, "begin of a duplicate did not write it")
			require.Equal(t, want.Code, got.Code, "status: begin against Write")
			require.Equal(t, want.Body.String(), got.Body.String(), "body: begin against Write")
			require.Equal(t, want.Header(), got.Header(), "fields: begin against Write")

			_, _, rej, written = g.beginW(ctx, "u", nil)
			require.NotNil(t, rej, "with a nil writer: want the rejection returned")
			require.False(t, written, "with a nil writer: written")
			if !c.quota && !c.obs {
				allocs := func(f func()) float64 { return testing.AllocsPerRun(100, f) }
				withRej := allocs(func() { g.beginN(ctx, "u", 1) })
				w := &discardWriter{h: http.Header{}}
				written := allocs(func() { clear(w.h); g.beginW(ctx, "u", w) })
				assert.Equal(t, withRej-1, written, "allocations of a duplicate answered by begin, against beginN's %v: one fewer", withRej)
			}
		})
	}
	t.Run("dry run", func(t *testing.T) {
		l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", Options: throttle.Options{DryRun: true}})
		require.NoError(t, err)
		g := Lock(l)
		_, first, _, _ := g.beginW(ctx, "u", httptest.NewRecorder())
		defer first.finish(ctx, http.StatusOK, false)
		w := httptest.NewRecorder()
		_, second, rej, written := g.beginW(ctx, "u", w)
		require.Nil(t, rej, "a dry run's duplicate turned away")
		require.False(t, written, "a dry run's duplicate written")
		require.Zero(t, w.Body.Len(), "a dry run's duplicate got a body")
		second.finish(ctx, http.StatusOK, false)
	})
}

// discardWriter is an http.ResponseWriter that keeps only its header.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header       { return w.h }
func (*discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (*discardWriter) WriteHeader(int)             {}
