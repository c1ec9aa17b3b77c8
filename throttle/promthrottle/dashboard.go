package promthrottle

import _ "embed" // for Dashboard

// Dashboard is a Grafana (10 or later) dashboard of the metrics an Observer
// exports, as JSON: admissions and rejections per policy, the rejection
// ratio, store latency and hold time quantiles, store errors next to the
// requests they failed open or closed, lease losses and the memory stores'
// keys. Its data source is a variable, datasource, that lists the
// Prometheus data sources, and its policy variable filters every panel but
// the last (the memory stores are the process's, not a policy's).
//
// It is here for programs that provision Grafana, which can write it to a
// dashboards directory or send it to Grafana's HTTP API, so that the
// dashboard always matches the metrics of the version they link; the file
// it is embedded from, dashboard.json in this package, can be imported by
// hand. Treat it as read-only: it is shared by the whole process.
//
//go:embed dashboard.json
var Dashboard []byte
