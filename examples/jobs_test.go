package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/internal/redistest"
)

// jobWork is the -work the job tests run the examples with: long enough
// for concurrent requests to land while a job runs, short enough to wait.
const jobWork = time.Second

// jobsPolicy is the RateLimit-Policy of POST /jobs/{id}/run: an Exclusive
// policy limits concurrency, not a rate (DESIGN section 3).
const jobsPolicy = `"jobs";q=1;qu="concurrent-requests"`

var exampleNames = []string{"nethttp", "gin", "echo", "fiber"}

// runJob posts to /jobs/{escaped}/run; escaped is put in the path as is.
func runJob(ctx context.Context, c *http.Client, a *app, escaped string) reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+"/jobs/"+escaped+"/run", nil)
	if err != nil {
		return reply{app: a, err: err}
	}
	r := do(c, req)
	r.app = a
	return r
}

// checkJobDone requires the answer of a job that ran to the end: 200 after
// at least the work time, with the JSON body naming the job (decoded) and
// the example.
func checkJobDone(t *testing.T, id string, r reply, work time.Duration) {
	t.Helper()
	name := r.app.name
	if r.err != nil || r.status != http.StatusOK {
		t.Errorf("%s job %q: got %d %v %s, want 200", name, id, r.status, r.err, r.body)
		return
	}
	if took := r.end.Sub(r.start); took < work {
		t.Errorf("%s job %q: answered after %v, before its work (%v) could be done", name, id, took, work)
	}
	if r.contentType != "application/json" {
		t.Errorf("%s job %q: Content-Type %q, want application/json", name, id, r.contentType)
	}
	if r.policy != jobsPolicy {
		t.Errorf("%s job %q: RateLimit-Policy %q, want %q", name, id, r.policy, jobsPolicy)
	}
	var body demo.JobResult
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body != (demo.JobResult{Job: id, Status: "done", Server: name}) {
		t.Errorf("%s job %q: body %q, want {\"job\":%q,\"status\":\"done\",\"server\":%q} (%v)", name, id, r.body, id, name, err)
	}
}

// checkJobBusy requires the 409 of a job id that is running (DESIGN
// sections 2 and 3): Retry-After within the job's lease, the RateLimit
// fields of the jobs policy, and a problem+json body that does not show
// the id.
func checkJobBusy(t *testing.T, id string, r reply) {
	t.Helper()
	name := r.app.name
	if r.err != nil || r.status != http.StatusConflict {
		t.Errorf("%s second run of job %q: got %d %v %s, want 409", name, id, r.status, r.err, r.body)
		return
	}
	maxSecs := int((demo.JobLease + time.Second - 1) / time.Second)
	if secs, err := strconv.Atoi(r.retryAfter); err != nil || secs < 1 || secs > maxSecs {
		t.Errorf("%s second run of job %q: Retry-After %q, want 1..%d (the lease)", name, id, r.retryAfter, maxSecs)
	}
	if r.policy != jobsPolicy {
		t.Errorf("%s second run of job %q: RateLimit-Policy %q, want %q", name, id, r.policy, jobsPolicy)
	}
	checkProblem(t, name+" second run of job "+strconv.Quote(id), r, http.StatusConflict)
	if strings.Contains(r.body, id) {
		t.Errorf("%s second run of job %q: body %q shows the id", name, id, r.body)
	}
}

// checkProblem requires an RFC 9457 problem+json answer with status.
func checkProblem(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.err != nil || r.status != status {
		t.Errorf("%s: got %d %v %s, want %d", what, r.status, r.err, r.body, status)
		return
	}
	if !strings.HasPrefix(r.contentType, "application/problem+json") {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, r.contentType)
	}
	var p struct {
		Type, Title, Detail string
		Status              int
	}
	if err := json.Unmarshal([]byte(r.body), &p); err != nil || p.Status != status || p.Title == "" || p.Detail == "" {
		t.Errorf("%s: body %q is not a problem with status %d (%v)", what, r.body, status, err)
	}
}

// checkOneRunner checks the answers to concurrent runs of one job id
// (decoded: id) sent at once: one 200 and a 409 for each other copy. Two
// runs of an id never overlap, so k copies that all got 200 cannot have
// been answered within less than k works of the first one being sent; a
// machine so slow that the copies were spread over more than that may
// admit one after another, and is only checked for 200s and 409s.
func checkOneRunner(t *testing.T, id string, rs []reply, work time.Duration) {
	t.Helper()
	first, last := rs[0].start, rs[0].end
	done := 0
	for _, r := range rs {
		if r.start.Before(first) {
			first = r.start
		}
		if r.end.After(last) {
			last = r.end
		}
		if r.err == nil && r.status == http.StatusOK {
			done++
		}
	}
	if done == 0 {
		t.Errorf("job %q: no run got 200, want one", id)
	}
	if done > 1 && last.Sub(first) < time.Duration(done)*work {
		t.Errorf("job %q: %d runs got 200 within %v: they overlapped, want one at a time", id, done, last.Sub(first))
	}
	if done > 1 {
		t.Logf("job %q: %d runs, one after another over %v (busy machine)", id, done, last.Sub(first))
	}
	for _, r := range rs {
		if r.err == nil && r.status == http.StatusOK {
			checkJobDone(t, id, r, work)
		} else {
			checkJobBusy(t, id, r)
		}
	}
}

// TestJobs runs each example on its in-memory store with -work 1s and
// checks POST /jobs/{id}/run (DESIGN section 6): two runs of one id sent at
// once give one 200, after the work, and one 409; other ids, the longest
// allowed one and one with encoded characters among them, run in parallel
// with it; the id is free again once the run returns, and at once when its
// client goes away (the handler stops early). An empty or over-long id gets
// a 400 problem and GET gets 405.
func TestJobs(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	longest := strings.Repeat("j", demo.MaxJobID)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name, "-work", jobWork.String())

			// Quick answers, sent while the jobs below run.
			quick := []struct {
				method, path string
				status       int
			}{
				{http.MethodPost, "/jobs//run", http.StatusBadRequest},
				{http.MethodPost, "/jobs/%2e%2e/run", http.StatusBadRequest},
				{http.MethodPost, "/jobs/" + longest + "j/run", http.StatusBadRequest},
				{http.MethodGet, "/jobs/report-a/run", http.StatusMethodNotAllowed},
			}
			var wg sync.WaitGroup
			gate := make(chan struct{})
			twins := make([]reply, 2)
			for i := range twins {
				wg.Go(func() {
					<-gate
					twins[i] = runJob(ctx, c, a, "report-a")
				})
			}
			others := map[string]string{ // decoded id: as sent
				"report-b": "report-b",
				longest:    longest,
				"x/y é":    url.PathEscape("x/y é"),
			}
			otherReplies := make(map[string]*reply)
			for id, escaped := range others {
				r := new(reply)
				otherReplies[id] = r
				wg.Go(func() {
					<-gate
					*r = runJob(ctx, c, a, escaped)
				})
			}
			quickReplies := make([]reply, len(quick))
			for i, q := range quick {
				wg.Go(func() {
					<-gate
					req, _ := http.NewRequest(q.method, a.url+q.path, nil)
					quickReplies[i] = do(c, req)
				})
			}
			close(gate)
			wg.Wait()

			checkOneRunner(t, "report-a", twins, jobWork)
			for id, r := range otherReplies {
				checkJobDone(t, id, *r, jobWork)
			}
			for i, q := range quick {
				what := name + " " + q.method + " " + q.path
				if q.status == http.StatusMethodNotAllowed {
					if r := quickReplies[i]; r.err != nil || r.status != q.status {
						t.Errorf("%s: got %d %v, want 405", what, r.status, r.err)
					}
					continue
				}
				checkProblem(t, what, quickReplies[i], q.status)
			}

			// Once a run has returned, its id runs again at once; and a run
			// whose client leaves frees its id without doing its work.
			wg.Go(func() { checkJobDone(t, "report-a", runJob(ctx, c, a, "report-a"), jobWork) })
			wg.Go(func() { checkClientLeaves(t, c, a) })
			wg.Wait()

			a.stop(t, syscall.SIGTERM)
			if out := a.output(); !strings.Contains(out, `msg="job stopped early"`) {
				t.Errorf("%s did not log that the job whose client left stopped early:\n%s", name, out)
			}
		})
	}
}

// checkClientLeaves starts a job whose client gives up after a moment, then
// asks for the same id until it runs: the handler must stop when the
// request's context ends and release the id, so the id runs again before
// the abandoned job's work would have been done.
func checkClientLeaves(t *testing.T, c *http.Client, a *app) {
	const id = "report-c"
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(jobWork/5, cancel)
	gone := runJob(ctx, c, a, id)
	if !errors.Is(gone.err, context.Canceled) {
		t.Errorf("%s job %q whose client left: got %d %v, want the client's cancellation", a.name, id, gone.status, gone.err)
		return
	}
	deadline := gone.start.Add(jobWork + 10*time.Second) // only ends a test whose id is never freed
	for {
		r := runJob(context.Background(), c, a, id)
		if r.err == nil && r.status == http.StatusOK {
			checkJobDone(t, id, r, jobWork)
			if !r.start.Before(gone.start.Add(jobWork)) {
				t.Errorf("%s job %q ran again only %v after the first was sent: the abandoned run kept its id for its whole work (%v)",
					a.name, id, r.start.Sub(gone.start), jobWork)
			}
			return
		}
		if r.err != nil || r.status != http.StatusConflict || time.Now().After(deadline) {
			t.Errorf("%s job %q after its client left: got %d %v %s, want 409 until the id is freed, then 200", a.name, id, r.status, r.err, r.body)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestJobsSharedRedis runs the four examples on one redis-server and sends
// one run of each job id to each of them at once: one process runs it, the
// other two answer 409 while it does, whichever framework serves which,
// which shows the four build the same key for the same id (an id with
// encoded characters too).
func TestJobsSharedRedis(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	args := []string{"-redis", srv.Addr, "-work", jobWork.String()}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)

	ids := []string{"sync-1", "sync-2", "sync-3", "x/y é"}
	replies := make([][]reply, len(ids))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, id := range ids {
		replies[i] = make([]reply, len(apps))
		for k, a := range apps {
			wg.Go(func() {
				<-gate
				replies[i][k] = runJob(context.Background(), c, a, url.PathEscape(id))
			})
		}
	}
	close(gate)
	wg.Wait()
	for i, id := range ids {
		checkOneRunner(t, id, replies[i], jobWork)
	}
	for _, a := range apps {
		a.stop(t, syscall.SIGTERM)
	}
}

// TestWorkFlag: -work must be a positive duration; otherwise each example
// exits with status 2 and says so, as for -window.
func TestWorkFlag(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	for _, name := range exampleNames {
		for _, work := range []string{"0", "-1s"} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := exec.CommandContext(ctx, binary(t, name), "-addr", "127.0.0.1:0", "-work", work)
			setDeathSignal(cmd)
			out, err := cmd.CombinedOutput()
			cancel()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("%s -work %s: %v, want exit status 2\n%s", name, work, err, out)
			}
			if !strings.Contains(string(out), "-work") || !strings.Contains(string(out), "positive duration") {
				t.Errorf("%s -work %s: output %q does not say that -work wants a positive duration", name, work, out)
			}
		}
	}
}
