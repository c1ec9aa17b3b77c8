package redistest

import "go.uber.org/goleak"

// IgnoreResolver is the goleak option for the tests that make Sentinel
// failover clients. go-redis gives such a client the placeholder address
// "FailoverClient" and, building its options, resolves it to classify the
// endpoint, under a 2-second bound of its own. The lookup fails on any
// machine, but where the DNS server does not answer, the resolver's
// goroutines outlive that bound and are still running when the test binary
// ends. They belong to the standard library's resolver, not to throttle,
// and end with their own timeout.
func IgnoreResolver() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net.(*Resolver).lookupIPAddr.func1"),
		goleak.IgnoreAnyFunction("net.(*Resolver).lookupIPAddr.func2"),
		goleak.IgnoreAnyFunction("net.(*Resolver).goLookupIPCNAMEOrder"),
		goleak.IgnoreAnyFunction("net.(*Resolver).goLookupIPCNAMEOrder.func3.1"),
		goleak.IgnoreAnyFunction("net.(*Resolver).goLookupIPCNAMEOrder.func4"),
	}
}
