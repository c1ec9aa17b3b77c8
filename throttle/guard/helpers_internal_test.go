package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
)

// beginN is begin for a request with no body fingerprint, whose
// rejection, if any, is returned rather than written.
func (g *Guard) beginN(ctx context.Context, id string, cost int) (context.Context, ticket, *Rejection) {
	var t ticket
	ctx, rej, _ := g.begin(ctx, &t, httptest.NewRequest(http.MethodGet, "/", nil), id, cost, "", nil, false)
	return ctx, t, rej
}

// begin1 is beginN with a cost of 1.
func (g *Guard) begin1(ctx context.Context, id string) (context.Context, ticket, *Rejection) {
	return g.beginN(ctx, id, 1)
}

// beginW is begin of a request with a cost of 1 whose rejection for a held
// key is written on w.
func (g *Guard) beginW(ctx context.Context, id string, w http.ResponseWriter) (context.Context, ticket, *Rejection, bool) {
	var t ticket
	ctx, rej, written := g.begin(ctx, &t, httptest.NewRequest(http.MethodGet, "/", nil), id, 1, "", w, w != nil)
	return ctx, t, rej, written
}
