// Package echoadapter guards echo routes with a guard.Guard, one line per
// route:
//
//	e.POST("/submit", submit, echoadapter.Middleware(guard.Lock(lock), key))
//
// Answers and stored keys are package guard's, as in the nethttp and gin
// adapters. A hold ends with the status the client gets, the returned
// error's as echo renders it. See docs/adapters.md in the repository.
package echoadapter
