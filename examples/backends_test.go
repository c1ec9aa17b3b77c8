package examples_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestBackendFlags runs the net/http example against each distributed Redis
// set-up its flags name: a Redis Cluster (-redis-cluster), a Sentinel group
// (-redis-sentinel master@...) and Redlock over three independent masters
// (-redis a,b,c). A duplicate is turned away in each, and a gin example on
// the same set-up shares the key, the quota of GET /search, the two quotas
// of GET /api/items, the exports in flight and the admin reset.
func TestBackendFlags(t *testing.T) {
	skipUnlessProcesses(t)
	for _, c := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"cluster", func(t *testing.T) []string {
			cl := redistest.StartCluster(t, 3)
			return []string{"-redis-cluster", strings.Join(cl.Addrs, ",")}
		}},
		{"sentinel", func(t *testing.T) []string {
			s := redistest.StartSentinel(t)
			return []string{"-redis-sentinel", redistest.SentinelMaster + "@" + strings.Join(s.Addrs, ",")}
		}},
		{"redlock", func(t *testing.T) []string {
			var addrs []string
			for range 3 {
				addrs = append(addrs, redistest.Start(t).Addr)
			}
			return []string{"-redis", strings.Join(addrs, ",")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args(t), "-window", window.String(), "-work", "1s", "-admin-token", adminToken)
			a, b := startApp(t, "nethttp", args...), startApp(t, "gin", args...)
			cl := newClient(t)
			checkAccepted(t, a, "first submit", submit(cl, a, "carol"))
			checkDuplicate(t, b.name, "carol", submit(cl, b, "carol"), window)
			checkDuplicate(t, a.name, "carol", submit(cl, a, "carol"), window)
			checkAccepted(t, b, "another user's submit", submit(cl, b, "dave"))
			// Both processes spend one quota of GET /search for a user
			// (over Redlock, kept on its first master): r goes 9, 8.
			checkSearchRun(t, "erin", []reply{search(cl, a, "erin", "gcra"), search(cl, b, "erin", "rate")},
				[]string{"gcra", "rate"})
			apps := []*app{a, b}
			checkItems(t, cl, apps, "fay")
			checkExports(t, cl, apps, "fay", time.Second)
			checkAdmin(t, cl, apps, "gus")
			if out := a.output(); !strings.Contains(out, "kind="+c.name) {
				t.Errorf("the example did not log the %s store:\n%s", c.name, out)
			}
		})
	}
}
