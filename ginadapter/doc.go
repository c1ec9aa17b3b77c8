// Package ginadapter guards gin routes with a guard.Guard, one line per
// route:
//
//	r.POST("/submit", ginadapter.Middleware(guard.Lock(lock), key), submit)
//
// Answers and stored keys are package guard's, as in the nethttp and echo
// adapters. A chain that leaves c.Errors set and writes nothing counts as
// failed. See docs/adapters.md in the repository for how a hold ends.
package ginadapter
