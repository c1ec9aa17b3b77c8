package promthrottle_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// exported returns the names of the metrics obs describes, with their
// types, which the descriptors do not carry: they are read from a gather
// after one event of every kind.
func exported(t *testing.T, obs *promthrottle.Observer) map[string]dto.MetricType {
	t.Helper()
	ch := make(chan *prometheus.Desc, 32)
	obs.Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	observeAll(obs, "dashboard")
	fs := gather(t, newRegistry(t, obs))
	out := map[string]dto.MetricType{}
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, "no name in descriptor %s", d)
		mf := fs[m[1]]
		require.NotNil(t, mf, "%s is described but was not collected", m[1])
		out[m[1]] = mf.GetType()
	}
	return out
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string      `json:"name"`
			Type       string      `json:"type"`
			Query      any         `json:"query"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title      string      `json:"title"`
	Type       string      `json:"type"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// TestDashboard parses the embedded dashboard, finds every metric its
// PromQL uses, and checks that each is one the Observer exports (a
// histogram's with its _bucket, _sum or _count suffix), that every export
// is used, and that every query goes to the datasource variable.
func TestDashboard(t *testing.T) {
	var d dashboard
	require.NoError(t, json.Unmarshal(promthrottle.Dashboard, &d), "dashboard.json")
	require.False(t, d.Title == "" || d.UID == "" || d.SchemaVersion < 36,
		"dashboard title %q, uid %q, schema %d: not a Grafana 10 dashboard", d.Title, d.UID, d.SchemaVersion)
	var exprs []string
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch v.Type {
		case "datasource":
			assert.Equal(t, "prometheus", v.Query, "datasource variable %q: data sources", v.Name)
		case "query":
			checkDatasource(t, "variable "+v.Name, v.Datasource)
			q, _ := json.Marshal(v.Query)
			exprs = append(exprs, string(q))
		}
	}
	require.True(t, vars["datasource"], "no datasource variable")
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			checkDatasource(t, "panel "+p.Title, p.Datasource)
			assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			for _, tg := range p.Targets {
				checkDatasource(t, "panel "+p.Title+" "+tg.RefID, tg.Datasource)
				assert.NotEmpty(t, strings.TrimSpace(tg.Expr), "panel %q query %s is empty", p.Title, tg.RefID)
				exprs = append(exprs, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, want := range []string{"Rejection ratio", "Store latency p50 / p99", "Hold time p50 / p99",
		"Store errors and fail-opens", "Lease losses and FailOver switches", "Near cache hits and invalidations",
		"Overload limit, in flight and queued", "Overload queueing delay and shed requests"} {
		assert.True(t, slices.ContainsFunc(d.Panels, func(p panel) bool { return p.Title == want }), "no panel %q", want)
	}

	names := exported(t, promthrottle.New(memstore.New()).NearCaches(nearCache{}).Overload(newOverload(t, "dashboard")))
	require.Len(t, names, 15, "the Observer's metrics")
	used := map[string]bool{}
	metric := regexp.MustCompile(`\bthrottle_[a-z0-9_]*`)
	for _, e := range exprs {
		found := metric.FindAllString(e, -1)
		assert.False(t, len(found) == 0 && !strings.Contains(e, "label_values"), "query %q uses no throttle metric", e)
		for _, m := range found {
			base, ok := exportedName(m, names)
			if !assert.True(t, ok, "query %q uses %s, which the Observer does not export", e, m) {
				continue
			}
			used[base] = true
		}
		assert.Equal(t, strings.Count(e, "("), strings.Count(e, ")"), "query %q: unbalanced brackets", e)
		assert.Equal(t, strings.Count(e, "{"), strings.Count(e, "}"), "query %q: unbalanced braces", e)
	}
	for name := range names {
		assert.True(t, used[name], "the dashboard shows nothing of %s", name)
	}
}

// exportedName returns the exported metric m names: itself, or a
// histogram's series with a suffix.
func exportedName(m string, names map[string]dto.MetricType) (string, bool) {
	if _, ok := names[m]; ok {
		return m, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(m, suffix)
		if ok && names[base] == dto.MetricType_HISTOGRAM {
			return base, true
		}
	}
	return "", false
}

func checkDatasource(t *testing.T, what string, ds *datasource) {
	t.Helper()
	assert.Equal(t, &datasource{Type: "prometheus", UID: "${datasource}"}, ds, "%s: datasource", what)
}
