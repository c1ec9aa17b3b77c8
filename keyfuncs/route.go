package keyfuncs

import (
	"net/http"
	"strconv"
)

// PathValue keys on the wildcard name of the http.ServeMux route the
// request matched, such as {id} in "POST /orders/{id}/pay". A missing or
// empty value gives a 400 *Error with source `path value "<name>"`. gin
// and echo do not fill r.PathValue: use their adapters' path sources.
func PathValue(name string) Func {
	errMissing := missing("path value " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		if v := r.PathValue(name); v != "" {
			return v, nil
		}
		return "", errMissing
	}
}

// Pattern keys on the http.ServeMux pattern the request matched, such as
// "POST /orders/{id}", so that one limit covers a whole route whatever its
// path values. The mux sets it when it dispatches, so install the
// middleware on each route, inside the mux: a request that went through no
// ServeMux route gives a 400 *Error with source "route pattern". gin and
// echo adapters offer their own route sources.
func Pattern() Func {
	errMissing := missing("route pattern")
	return func(r *http.Request) (string, error) {
		if r.Pattern != "" {
			return r.Pattern, nil
		}
		return "", errMissing
	}
}

// Method keys on the request method, such as "POST", typically joined with
// a user and a route (a pattern such as "/carts" names no method). An
// empty method means GET, as in net/http.
func Method() Func {
	return func(r *http.Request) (string, error) {
		if r.Method == "" {
			return http.MethodGet, nil
		}
		return r.Method, nil
	}
}
