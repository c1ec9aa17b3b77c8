package throttle

import (
	"context"

	"github.com/go-throttle/throttle/internal/storekit"
)

type ownerKey struct{}

// WithOwner returns ctx carrying a new owner: under a Reentrant policy, the
// acquisitions made with it share one owner, which may take a key it holds
// again. Do and the Exclusive middleware hand their work such a context.
func WithOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownerKey{}, storekit.NewToken())
}

// ownerFrom returns the owner carried by ctx, or "".
func ownerFrom(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}

type leaseKey struct{}

// LeaseFrom returns the lease that Do or a middleware holds for the work
// ctx was handed, or nil: handlers read the fencing token from it.
func LeaseFrom(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l
}

// WithLease returns ctx carrying lease for LeaseFrom and, under a Reentrant
// policy, its owner. Adapters call it; KeepAlive and Do already do.
func WithLease(ctx context.Context, lease *Lease) context.Context {
	ctx = context.WithValue(ctx, leaseKey{}, lease)
	if lease.reentrant && ownerFrom(ctx) != lease.token {
		ctx = context.WithValue(ctx, ownerKey{}, lease.token)
	}
	return ctx
}
