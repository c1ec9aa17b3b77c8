package throttle

import (
	"context"

	"github.com/go-throttle/throttle/throttle/store"
)

type ownerKey struct{}

// WithOwner returns a context that carries a new owner identity. Under a
// Reentrant policy, acquisitions made with that context (or one derived from
// it) share one owner: a key the owner holds can be acquired again without
// blocking, and is freed when every hold is released.
//
// Go has no thread identity to hang reentrancy on, so the context carries it.
// Limiter.Do and the Exclusive middleware already hand their work a context
// with an owner; call WithOwner yourself only to make a wider scope reentrant.
func WithOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownerKey{}, store.NewToken())
}

// ownerFrom returns the owner carried by ctx, or "".
func ownerFrom(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}

type leaseKey struct{}

// LeaseFrom returns the lease a Limiter.Do or a throttle middleware holds
// for the work that ctx was handed, or nil. Handlers use it to read the
// fencing token (Lease.Fence) and pass it on to a conditional write.
func LeaseFrom(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l
}

// WithLease returns ctx carrying lease, for LeaseFrom. Middleware adapters
// call it (KeepAlive and Do already do); with a Reentrant lease it also
// carries the lease's owner, so that code called with the context can
// re-enter the same key.
func WithLease(ctx context.Context, lease *Lease) context.Context {
	ctx = context.WithValue(ctx, leaseKey{}, lease)
	if lease.reentrant && ownerFrom(ctx) != lease.token {
		ctx = context.WithValue(ctx, ownerKey{}, lease.token)
	}
	return ctx
}
