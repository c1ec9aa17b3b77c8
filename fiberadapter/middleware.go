package fiberadapter

import (
	"errors"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/utils/v2"

	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns fiber middleware that decides each request with g
// under the identity key builds from the fiber.Ctx (Header, Cookie,
// RemoteIP, Param, Value, Route, or Request for any keyfuncs.Func). The
// rest of the chain runs with c.Context() carrying the lease
// (throttle.LeaseFrom) when the mode needs one; an Exclusive one is
// cancelled with throttle.ErrLost if the lease is lost. A request turned
// away never reaches c.Next. A panic ends the hold as failed and keeps
// unwinding. It panics when g or key is nil.
//
// The flow.Call's Request is the fiber.Ctx: give g flow.Skip, flow.WithCost
// (through guard.WithFlow) and rate functions of the flow.Call, as guard's
// functions of an *http.Request do not apply here.
func Middleware(g *guard.Guard, key func(fiber.Ctx) (string, error), opts ...Option) fiber.Handler {
	if g == nil || key == nil {
		panic("fiberadapter: Middleware needs a non-nil Guard and key function")
	}
	m := &middleware{g: g, key: key}
	for _, o := range opts {
		o(m)
	}
	return m.serve
}

// Option configures Middleware.
type Option func(*middleware)

// WithRejectHandler answers rejected requests with h instead of the
// default problem+json: h writes the response and returns nil, or returns
// an error for the app's ErrorHandler, such as
// fiber.NewError(rej.Status, rej.Detail); the Retry-After and RateLimit
// fields are set already, and rej.RetryAfter and rej.Limits say the same.
// A replayed response never reaches h.
func WithRejectHandler(h func(c fiber.Ctx, rej *guard.Rejection) error) Option {
	return func(m *middleware) { m.reject = h }
}

type middleware struct {
	g      *guard.Guard
	key    func(fiber.Ctx) (string, error)
	reject func(fiber.Ctx, *guard.Rejection) error
}

func (m *middleware) serve(c fiber.Ctx) error {
	id, err := m.key(c)
	call := flow.Call{Route: c.Route().Path, ID: id, Err: err, Request: c}
	m.g.Scope(&call, c.Method(), c.Path(), func() ([]byte, bool) {
		req := c.Request()
		if req.Header.Peek("Idempotency-Key") == nil {
			return nil, false
		}
		return req.Body(), true
	})
	base := c.Context()
	h := make(map[string][]string, 4)
	var herr error // the chain's
	var ref flow.Refusal
	if m.g.Job().Serve(base, call, &ref, func(p flow.Permit) flow.Outcome {
		capture := m.g.Admit(h, &p)
		setHeader(c, h)
		if ctx := p.Context(); ctx != base {
			c.SetContext(ctx)
		}
		herr = c.Next()
		c.SetContext(base)
		return m.g.Outcome(record(c, herr, capture))
	}) {
		return herr
	}
	rej := m.g.Rejection(ref)
	if m.reject == nil || rej.Reason == guard.ReasonReplayed {
		status, body := rej.Render(h)
		setHeader(c, h)
		return c.Status(status).Send(body)
	}
	return m.rejected(c, h, rej)
}

// rejected hands rej, with its header fields set, to the reject handler
// (rej is a copy: only this path moves one to the heap).
func (m *middleware) rejected(c fiber.Ctx, h map[string][]string, rej guard.Rejection) error {
	rej.SetHeader(h)
	setHeader(c, h)
	return m.reject(c, &rej)
}

// record returns the status the client gets after a chain that returned
// err, and feeds capture (a Replay key's first request) the response
// fasthttp buffered, unless it is streamed.
func record(c fiber.Ctx, err error, capture *guard.Capture) (int, *guard.Capture) {
	res := c.Response()
	if err != nil { // the app's ErrorHandler answers, as fiber's default one does
		var fe *fiber.Error
		if errors.As(err, &fe) {
			return fe.Code, nil
		}
		return fiber.StatusInternalServerError, nil
	}
	if capture == nil {
		return res.StatusCode(), nil
	}
	if res.IsBodyStream() {
		capture.Abandon()
		return res.StatusCode(), capture
	}
	h := make(map[string][]string)
	for k, v := range res.Header.All() {
		h[string(k)] = append(h[string(k)], string(v))
	}
	capture.WriteHeader(h, res.StatusCode())
	capture.Write(res.Body())
	return res.StatusCode(), capture
}

// setHeader sets the fields of h, keyed by canonical names, on c's
// response: fasthttp copies keys and values, and needs not normalise them.
func setHeader(c fiber.Ctx, h map[string][]string) {
	res := &c.Response().Header
	for k, vs := range h {
		if k == fiber.HeaderContentLength { // fasthttp sets it from the body
			continue
		}
		for i, v := range vs {
			if i == 0 {
				res.SetCanonical(utils.UnsafeBytes(k), utils.UnsafeBytes(v))
			} else {
				res.AddBytesKV(utils.UnsafeBytes(k), utils.UnsafeBytes(v))
			}
		}
	}
}
