// Package fiberadapter guards fiber v3 routes with a guard.Guard, one line
// per route:
//
//	app.Post("/submit", fiberadapter.Middleware(guard.Lock(lock), key), submit)
//
// Answers and stored keys are package guard's, as in the nethttp, gin and
// echo adapters, so that services in the four frameworks share locks on one
// Redis. fasthttp has no net/http types, so the middleware serves with
// guard's transport-neutral API (Guard.Job, Admit, Outcome, Rejection) and
// keys on the fiber.Ctx. A hold ends with the status the client gets: the
// one the chain left on the response, or, for an error the chain returned,
// the one fiber's default ErrorHandler renders it with. Register the
// middleware on each route, not with app.Use, under which c.Route().Path,
// the route a Replay scopes its keys by, is the prefix. See
// docs/adapters.md in the repository.
package fiberadapter
