package promthrottle

import _ "embed" // for Dashboard

// Dashboard is the Grafana dashboard of the Observer's metrics, as JSON
// (dashboard.json in this package), so that a program provisioning Grafana
// matches the version it links. It is shared: treat it as read-only.
//
//go:embed dashboard.json
var Dashboard []byte
