package demo

import (
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// ResetWindow is how long POST /password-reset keeps a user from asking
// for another reset email: one email per user per minute.
const ResetWindow = time.Minute

// ResetPolicy returns the policy of POST /password-reset: Cooldown, one
// request per user per ResetWindow whatever its outcome. That is the mode
// for anything that must not be repeated quickly even when it fails, such
// as sending an email: Dedupe would free the key after a failure and let a
// client that fails on purpose send emails without end. While Redis fails
// it does what -fail says, as /submit does.
func ResetPolicy(s Settings) throttle.Policy {
	return throttle.Policy{
		Name:           "reset",
		Mode:           throttle.Cooldown,
		Window:         ResetWindow,
		WhenStoreFails: s.WhenStoreFails,
		Fallback:       s.Fallback,
		Observer:       s.Observer,
	}
}

// NewResetLimiter returns the limiter of POST /password-reset: ResetPolicy
// on store.
func NewResetLimiter(store throttle.Store, s Settings) (*throttle.Limiter, error) {
	return throttle.New(store, ResetPolicy(s))
}

// ResetJSON is the body of an accepted POST /password-reset (202).
var ResetJSON = []byte(`{"status":"queued","detail":"If the account exists, a reset email is on its way."}` + "\n")

// Reset is the handler of POST /password-reset once the middleware
// admitted it: 202 Accepted with ResetJSON (the demo sends no email).
func Reset(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(ResetJSON)
}
