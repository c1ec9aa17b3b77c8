package demo

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// JobLease is the lease of a running job (POST /jobs/{id}/run): the
// middleware refreshes it every JobLease/3 while the job works, however long
// -work is, so it only bounds how long a crashed process keeps the id
// blocked. It also makes the Retry-After of a 409, the holder's remaining
// lease, a few seconds rather than the 30 s of the default.
const JobLease = 3 * time.Second

// MaxJobID is the longest job id POST /jobs/{id}/run accepts, in bytes
// (after percent-decoding). A longer one gets 400: an id is a name, and a
// client sending kilobytes of it is mistaken or probing.
const MaxJobID = 64

// JobsLock returns the config of POST /jobs/{id}/run's lock: Exclusive,
// one run per job id at a time, whatever the user; a second caller for an
// id that is running gets 409 Conflict. While Redis fails it does what
// -fail says; by default an Exclusive lock fails closed (503), since its
// callers rely on mutual exclusion.
func JobsLock(s Settings) throttle.LockConfig {
	return throttle.LockConfig{
		Name:    "jobs",
		Mode:    throttle.Exclusive,
		TTL:     JobLease, // the lease, refreshed while the job works
		Options: s.Options(),
	}
}

// NewJobsLock returns the lock of POST /jobs/{id}/run: JobsLock on store,
// the store of locks the flags chose.
func NewJobsLock(store store.Store, s Settings) (*throttle.Lock, error) {
	return throttle.NewLock(store, JobsLock(s))
}

// The errors of a job id that cannot be a key. Their source is the one
// keyfuncs.PathValue("id") names, so that the three examples say the same.
var (
	errJobIDMissing = &keyfuncs.Error{Status: http.StatusBadRequest, Source: `path value "id"`, Reason: "missing"}
	errJobIDLong    = &keyfuncs.Error{Status: http.StatusBadRequest, Source: `path value "id"`,
		Reason: "longer than " + strconv.Itoa(MaxJobID) + " bytes"}
	errJobIDEscape = &keyfuncs.Error{Status: http.StatusBadRequest, Source: `path value "id"`, Reason: "bad percent-encoding"}
)

// JobKey wraps the key function that reads the {id} of POST
// /jobs/{id}/run from a request (keyfuncs.PathValue("id") in net/http, the
// route parameter in gin and echo) so that an empty id, or one longer than
// MaxJobID, is refused with a 400 *keyfuncs.Error, which the middleware
// answers as a problem. The id itself, percent-decoded, is the identity: the
// three examples build the same stored key for the same job.
func JobKey[F ~func(A) (string, error), A any](f F) F {
	return func(a A) (string, error) {
		id, err := f(a)
		if err != nil {
			return "", err
		}
		return CheckJobID(id)
	}
}

// CheckJobID returns id when it can be a job's identity: not empty, at most
// MaxJobID bytes.
func CheckJobID(id string) (string, error) {
	switch {
	case id == "":
		return "", errJobIDMissing
	case len(id) > MaxJobID:
		return "", errJobIDLong
	}
	return id, nil
}

// BadJobID is the error of an id whose percent-encoding cannot be decoded,
// for a router that leaves route parameters encoded.
func BadJobID() error { return errJobIDEscape }

// JobResult is the JSON body of a job that ran to the end: 200 with
// {"job":id,"status":"done","server":name}.
type JobResult struct {
	Job    string `json:"job"`
	Status string `json:"status"`
	Server string `json:"server"`
}

// RunJob is the handler of POST /jobs/{id}/run once the middleware admitted
// it, shared by the three examples: it "works" for the duration -work gave
// (s.Work) and answers 200 with a JobResult. It stops early when r's
// context ends: the client went away, the server is shutting down past its
// grace period, or the job lost its lease (the middleware cancels the
// context with cause throttle.ErrLost, when the lease could not be
// refreshed in time and another caller may now hold the id). It then
// answers 503, a problem the client, if still there, may retry; the
// middleware releases the id in any case.
func RunJob(w http.ResponseWriter, r *http.Request, s Settings, server, id string) {
	ctx := r.Context()
	timer := time.NewTimer(s.Work)
	defer timer.Stop()
	select {
	case <-timer.C:
		b, err := json.Marshal(JobResult{Job: id, Status: "done", Server: server})
		if err != nil { // cannot happen: only strings
			b = []byte(`{"status":"done"}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(b, '\n'))
	case <-ctx.Done():
		cause := context.Cause(ctx)
		detail := "The job was stopped before it finished because the request was cancelled."
		switch {
		case errors.Is(cause, throttle.ErrLost):
			detail = "The job lost its lock before it finished and was stopped. Retry it."
		case errors.Is(cause, ErrShuttingDown):
			detail = "The server is shutting down; the job was stopped before it finished. Retry it."
		}
		slog.Warn("job stopped early", "server", server, "job", id, "cause", cause)
		w.Header().Set("Retry-After", "1")
		WriteProblem(w, http.StatusServiceUnavailable, detail)
	}
}
