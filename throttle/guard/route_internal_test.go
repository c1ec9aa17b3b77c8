package guard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRoute: a ServeMux pattern's route is its path, without the method
// and host.
func TestRoute(t *testing.T) {
	for pattern, want := range map[string]string{
		"":                                "",
		"/":                               "/",
		"/orders":                         "/orders",
		"POST /orders":                    "/orders",
		"POST  /orders/{id}":              "/orders/{id}",
		"GET\t/healthz":                   "/healthz",
		"example.com/orders/":             "/orders/",
		"POST api.example.com/orders/{$}": "/orders/{$}",
	} {
		assert.Equal(t, want, routePath(pattern), "routePath(%q)", pattern)
	}
}
