package promthrottle

import _ "embed" // for Dashboard

// Dashboard is a Grafana (10 or later) dashboard of the Observer's
// metrics, as JSON, for programs that provision Grafana, so that it always
// matches the metrics of the version they link: admissions and rejections,
// store latency, errors and hold times, lease losses and the memory
// stores' keys, with a variable for the Prometheus data source and one for
// the policy. dashboard.json in this package is the same file, to import
// by hand. Treat it as read-only: it is shared by the whole process.
//
//go:embed dashboard.json
var Dashboard []byte
