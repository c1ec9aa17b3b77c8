package demo

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
)

// Admin is the handler of POST /admin/reset?user=ID, which an operator
// calls with Authorization: Bearer -admin-token to give user ID a fresh
// start: every quota cleared (Quotas, with their rates) and every held key
// freed (Locks). It answers 204, or 401 problem+json and clears nothing
// without the token, or 400 without a user. It is never throttled.
type Admin struct {
	Token  string
	Key    keyfuncs.Func // the examples' user key, to build each identity of ID
	Quotas []AdminQuota
	Locks  []*throttle.Lock
}

// AdminQuota is one quota Admin clears, under each of its rates (none: its
// plain rate).
type AdminQuota struct {
	Quota *throttle.Quota
	Rates []throttle.Rate
}

// ServeHTTP resets the user the user query parameter names.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The scheme is case-insensitive (RFC 9110 §11.1).
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || a.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
		WriteProblem(w, http.StatusUnauthorized, "This route needs the admin token: Authorization: Bearer <token>.")
		return
	}
	user := r.URL.Query().Get("user")
	if user == "" {
		WriteProblem(w, http.StatusBadRequest, "Name the user to reset: ?user=ID.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := a.reset(ctx, user); err != nil {
		slog.Error("admin reset failed", "user", user, "err", err)
		w.Header().Set("Retry-After", "1")
		WriteProblem(w, http.StatusServiceUnavailable, "The reset could not be completed. Retry shortly.")
		return
	}
	slog.Info("admin reset", "user", user)
	w.WriteHeader(http.StatusNoContent)
}

// reset clears every quota and frees every key of user, under each
// identity the user key gives the user: by the X-User-ID header and by the
// demo_user cookie.
func (a *Admin) reset(ctx context.Context, user string) error {
	var errs []error
	for _, id := range a.identities(user) {
		for _, q := range a.Quotas {
			errs = append(errs, q.Quota.Reset(ctx, id, q.Rates...))
		}
		for _, l := range a.Locks {
			errs = append(errs, l.Reset(ctx, id))
		}
	}
	return errors.Join(errs...)
}

func (a *Admin) identities(user string) []string {
	byHeader, _ := http.NewRequest(http.MethodGet, "/", nil)
	byHeader.Header.Set("X-User-ID", user)
	byCookie, _ := http.NewRequest(http.MethodGet, "/", nil)
	byCookie.AddCookie(&http.Cookie{Name: UserCookie, Value: user})
	var ids []string
	for _, r := range []*http.Request{byHeader, byCookie} {
		if id, err := a.Key(r); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// NewAdmin returns the handler of POST /admin/reset for the examples'
// limiters, or nil when -admin-token is empty: then the route does not
// exist (404). key is the user key of /submit.
func NewAdmin(s Settings, key keyfuncs.Func, search, items *throttle.Quota, submit, reset *throttle.Lock) http.Handler {
	if s.AdminToken == "" {
		return nil
	}
	return &Admin{Token: s.AdminToken, Key: key,
		Quotas: []AdminQuota{{Quota: search}, {Quota: items, Rates: freeItems}},
		Locks:  []*throttle.Lock{submit, reset}}
}
