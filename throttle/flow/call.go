package flow

// Call is what an adapter knows of a call before it is decided.
type Call struct {
	// ID is the caller's identity, as the adapter's key function built it.
	ID string
	// Err, if not nil, is why ID could not be built: the call is refused
	// (ReasonBadKey), never decided under a key shared with other calls;
	// under DryRun it goes ahead holding nothing.
	Err error
	// Method and Route name the operation, as the transport does: "POST"
	// and "/orders/{id}"; for gRPC, "" and the full method name. A Replay
	// stores its keys under them and ID, so that one Replay on two
	// operations never answers one with the other's answer; Locks and
	// Quotas store ID alone, shared across operations and transports.
	Method, Route string
	// Fingerprint is a digest of what a Replay call asks (its body): a
	// duplicate whose fingerprint differs from the first call's is refused
	// (ReasonKeyReused). "" matches any.
	Fingerprint string
	// Request is the transport's request, for the job's functions (Skip,
	// WithCost, a Quota's rates); flow never reads it.
	Request any
}

// Outcome is how a call that went ahead ended, for Permit.End.
type Outcome struct {
	// Failed frees a Dedupe or Replay key for a retry, and keeps the charge
	// of a CountOnlyFailures Quota.
	Failed bool
	// Panicked says the call panicked (Serve sets it and Failed).
	Panicked bool
	// Answer is the answer of a Replay key's first call (Permit.Records),
	// kept for its duplicates when it succeeded; nil when there is none to
	// keep (streamed, hijacked, too large): the duplicates are then refused
	// with ReasonNotKept.
	Answer *Answer
}

// Answer is a call's answer as a Replay keeps it for its duplicates.
type Answer struct {
	// Status is an HTTP status, 100 to 999; another transport maps its own
	// codes into that range.
	Status int
	// Header holds the fields (or metadata) to replay, one value per line.
	Header map[string][]string
	Body   []byte
}
