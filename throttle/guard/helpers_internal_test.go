package guard

import "context"

// beginN is begin for a request with no body fingerprint, whose
// rejection, if any, is returned rather than written.
func (g *Guard) beginN(ctx context.Context, id string, cost int) (context.Context, ticket, *Rejection) {
	ctx, t, rej, _ := g.begin(ctx, id, cost, "", nil)
	return ctx, t, rej
}

// begin1 is beginN with a cost of 1.
func (g *Guard) begin1(ctx context.Context, id string) (context.Context, ticket, *Rejection) {
	return g.beginN(ctx, id, 1)
}
