package redisstore_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkStrictPaired measures a strict decision against a smooth one of
// the same numbers, interleaved by benchload.Paired on one store: memstore,
// and redisstore on a real redis-server started for the run. Every
// decision is "distinct" (a new user: allowed, a new key; on Redis the
// smooth one by SET NX, the strict one by the script), "returning" (1024
// users in turn under a quota that never runs out during the run: allowed,
// the key grows or moves) or "hot" (one user whose quota is spent: refused,
// nothing written; on Redis the smooth refusal is answered by the near
// cache, the strict one by the script), at c1 and c16 goroutines.
func BenchmarkStrictPaired(b *testing.B) {
	rs, _, _ := newStore(b)
	ctx := b.Context()
	rates := map[string]store.Rate{
		"distinct":  {Limit: 100, Window: time.Minute, Burst: 100},
		"returning": {Limit: 10000, Window: time.Hour, Burst: 10000},
		"hot":       {Limit: 10, Window: time.Hour, Burst: 10},
	}
	var seq atomic.Int64
	for _, st := range []struct {
		name string
		q    store.Quota
	}{{"memstore", memstore.New()}, {"redisstore", rs}} {
		for _, strict := range []bool{false, true} {
			r := rates["hot"]
			r.Strict = strict
			if _, err := st.q.AllowN(ctx, "bench:{hot}"+strconv.FormatBool(strict), r, 10); err != nil {
				b.Fatal(err)
			}
		}
		for _, card := range []string{"distinct", "returning", "hot"} {
			for _, conc := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/%s/c%d", st.name, card, conc), func(b *testing.B) {
					b.ReportAllocs()
					var ops []benchload.Op
					for _, strict := range []bool{false, true} {
						r := rates[card]
						r.Strict = strict
						name := map[bool]string{false: "smooth", true: "strict"}[strict]
						ops = append(ops, benchload.Op{Name: name, Call: func() error {
							key := "bench:{hot}" + strconv.FormatBool(strict)
							switch card {
							case "distinct":
								key = "bench:{" + name + strconv.FormatInt(seq.Add(1), 10) + "}"
							case "returning":
								key = "bench:{" + name + strconv.FormatInt(seq.Add(1)%1024, 10) + "}"
							}
							d, err := st.q.AllowN(ctx, key, r, 1)
							if err == nil && d.Allowed != (card != "hot") {
								err = fmt.Errorf("%s %s: %+v", name, card, d)
							}
							return err
						}})
					}
					benchload.Paired(b, conc, ops)
				})
			}
		}
	}
}
