package flow

import "github.com/go-throttle/throttle/throttle"

// Mode returns the kind of limiter j decides with: its Lock's Mode
// (Dedupe, Cooldown, Exclusive), or throttle.ModeQuota, ModeReplay or
// ModeOverload. An adapter reads it to skip, on every call of the other
// kinds, work that only one kind uses: grpcadapter looks for the
// idempotency-key metadata and fingerprints the request for a Replay only.
func (j *Job) Mode() throttle.Mode { return j.mode }
