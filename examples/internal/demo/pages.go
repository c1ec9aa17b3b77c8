package demo

import (
	"bytes"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/throttle/guard"
)

// RejectPage answers a POST /submit that the throttle middleware turned
// away, in the three examples (each passes it to its adapter's
// WithRejectHandler). A browser (WantsHTML) gets a readable page with the
// rejection's status and the standard fields the middleware set: for a
// duplicate, 429 "already submitted, try again in N s", N being the
// Retry-After the page is sent with; for anything else (a key that could
// not be built, Redis down under -fail closed) the status and what to do.
// Every other client gets rej.Write's problem+json, the adapters'
// default answer, unchanged.
func RejectPage(w http.ResponseWriter, r *http.Request, rej *guard.Rejection) {
	if !WantsHTML(r) {
		rej.Write(w)
		return
	}
	// The page gives the wait Retry-After gives: rej.RetryAfter, the
	// seconds left of the first submission's window, rounded up.
	var d pageData
	if rej.RetryAfter > 0 {
		d.RetryAfter = strconv.Itoa(int(rej.RetryAfter / time.Second))
	}
	name := "error"
	if rej.Reason == guard.ReasonContended {
		name = "duplicate"
	} else {
		d.Detail = rej.Detail
	}
	writePage(w, rej.Status, name, d)
}

// errorPage answers a browser with an HTML page for status, saying detail:
// the page form of WriteProblem.
func errorPage(w http.ResponseWriter, status int, detail, server string) {
	writePage(w, status, "error", pageData{Server: server, Detail: detail})
}

// pageData is what the pages show. Every string is escaped by html/template.
type pageData struct {
	// Server names the example that answered; empty when unknown (the
	// rejection pages, written by the middleware).
	Server string
	// Cookie is the name of the user cookie (UserCookie).
	Cookie string
	// Window is the -window of /submit, such as "5s".
	Window string
	// Work is how long placing an order takes (SubmitWork), such as "1s".
	Work string
	// Who says what identified the user of a submission.
	Who string
	// Item and Quantity are the order's fields, as the form sent them.
	Item, Quantity string
	// RetryAfter is the whole seconds to wait before submitting again;
	// empty when there is nothing to wait for.
	RetryAfter string
	// Detail says what went wrong, for the error page.
	Detail string
	// Status and StatusText are the answer's status, filled in by
	// writePage.
	Status     int
	StatusText string
}

// writePage renders the page name with d and sends it with status. The
// page is rendered before anything is written, so that a template error
// gives a clean 500 rather than half a page.
func writePage(w http.ResponseWriter, status int, name string, d pageData) {
	d.Status, d.StatusText = status, http.StatusText(status)
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, d); err != nil {
		slog.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if name != "form" {
		// The answers of POST /submit depend on Accept: HTML for a
		// browser, JSON for the others. The form is HTML for everyone.
		h.Add("Vary", "Accept")
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pages are the HTML pages of the examples: the order form of GET / and
// the outcomes of POST /submit as a browser sees them. Each result page
// has an element #result whose data-status is the HTTP status, for tests.
var pages = template.Must(template.New("pages").Parse(`
{{define "head"}}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.}} · throttle demo</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40em; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; }
form { display: grid; gap: .8em; margin: 1.5em 0; padding: 1em; border: 1px solid #ccc; border-radius: 6px; }
label { display: grid; gap: .2em; }
label.check { display: block; }
button { font-size: 1.1em; padding: .5em 1em; justify-self: start; cursor: pointer; }
.note { color: #555; font-size: .9em; }
#result { padding: 1em; border-radius: 6px; }
.ok { background: #e7f6e7; border: 1px solid #7c7; }
.warn { background: #fff4e0; border: 1px solid #e9b35f; }
.bad { background: #fdecec; border: 1px solid #e08080; }
code { background: #f2f2f2; padding: 0 .2em; }
</style>
</head>
<body>
{{end}}

{{define "foot"}}<p class="note">{{if .Server}}Answered by the {{.Server}} example. {{end}}<a href="/">Back to the order form</a></p>
</body>
</html>
{{end}}

{{define "form"}}{{template "head" "Order form"}}<h1>Place an order</h1>
<p>This form posts to <code>POST /submit</code>, which accepts one submission per user every
{{.Window}}: a second one within that window, from a double click or from another tab, is turned away
with <code>429 Too Many Requests</code> and shown as an "already submitted" page.</p>
<p><strong>Who you are:</strong> the <code>{{.Cookie}}</code> cookie this page set, a random id that
only this browser sends (HttpOnly, so scripts cannot read it). Every tab of this browser sends the same
cookie, so two tabs are one user. (API clients send an <code>X-User-ID</code> header instead; without
either, a client is known by its IP address.)</p>
<form method="post" action="/submit">
<label>Item <input name="item" value="Coffee beans, 1 kg" maxlength="100" required></label>
<label>Quantity <input name="quantity" type="number" value="1" min="1" max="99" required></label>
<label class="check"><input name="fail" type="checkbox" value="1"> Make this order fail (422): a failed
submission frees the key at once, so you may submit again straight away</label>
<button id="submit" type="submit">Place order</button>
</form>
<p class="note">Placing an order takes the server about {{.Work}}, as on a busy shop: double-click
the button, or submit in two tabs at once, and the second submission reaches the server while the first
is still being processed.</p>
<p class="note">Served by the {{.Server}} example.</p>
</body>
</html>
{{end}}

{{define "accepted"}}{{template "head" "Order accepted"}}<div id="result" class="ok" data-status="{{.Status}}">
<h1>Order accepted</h1>
<p>Your order of {{.Quantity}} × {{.Item}} was placed.</p>
<p>You were identified by {{.Who}}. Submitting again within the window gets "already submitted".</p>
</div>
{{template "foot" .}}{{end}}

{{define "failed"}}{{template "head" "Order failed"}}<div id="result" class="bad" data-status="{{.Status}}">
<h1>Order failed ({{.Status}} {{.StatusText}})</h1>
<p>You asked for a failed submission (fail=1), so nothing was ordered. A failed submission frees the
key: you may submit again at once.</p>
</div>
{{template "foot" .}}{{end}}

{{define "duplicate"}}{{template "head" "Already submitted"}}<div id="result" class="warn" data-status="{{.Status}}">
<h1>Already submitted</h1>
<p>This order was already submitted moments ago (a double click, or another tab), so this copy was not
processed and nothing was ordered twice.</p>
<p><strong>Try again in {{.RetryAfter}} s</strong> if you do want to order again.</p>
</div>
{{template "foot" .}}{{end}}

{{define "error"}}{{template "head" .StatusText}}<div id="result" class="bad" data-status="{{.Status}}">
<h1>{{.Status}} {{.StatusText}}</h1>
<p>{{.Detail}}</p>
{{if .RetryAfter}}<p>Try again in {{.RetryAfter}} s.</p>{{end}}
</div>
{{template "foot" .}}{{end}}
`))
