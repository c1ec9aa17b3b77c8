// Package adaptertest is the behaviour suite the three middleware adapters
// (nethttp, ginadapter, echoadapter) share. Each adapter describes how to
// put a plain http.Handler behind its middleware on a real engine (an
// http.ServeMux chain, a gin.Engine, an echo.Echo) and runs the same table
// of checks, so that "all three adapters alike" (DESIGN.md section 3) is
// tested, not assumed. It also holds the shared benchmarks.
package adaptertest
