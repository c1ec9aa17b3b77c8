package demo

import (
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// ResetWindow is how long POST /password-reset keeps a user from asking
// for another reset email: one email per user per minute.
const ResetWindow = time.Minute

// ResetLock returns the config of POST /password-reset's lock: Cooldown,
// one request per user per ResetWindow whatever its outcome. That is the
// mode for anything that must not be repeated quickly even when it fails,
// such as sending an email: Dedupe would free the key after a failure and
// let a client that fails on purpose send emails without end. While Redis
// fails it does what -fail says, as /submit does.
func ResetLock(s Settings) throttle.LockConfig {
	return throttle.LockConfig{
		Name:    "reset",
		Mode:    throttle.Cooldown,
		TTL:     ResetWindow,
		Options: s.Options(),
	}
}

// NewResetLock returns the lock of POST /password-reset: ResetLock on
// store.
func NewResetLock(store store.Store, s Settings) (*throttle.Lock, error) {
	return throttle.NewLock(store, ResetLock(s))
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
