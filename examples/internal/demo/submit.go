package demo

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
)

// SubmitRejection is the JSON body of a submission the handler turns down
// (422): {"status":"rejected","reason":...,"server":name}.
type SubmitRejection struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	Server string `json:"server"`
}

// maxForm is the longest form body RejectSubmission reads.
const maxForm = 64 << 10

// RejectSubmission shows Dedupe's release on failure on POST /submit: when
// the request asks for it with fail=1, as a query parameter or a field of an
// application/x-www-form-urlencoded body, it answers 422 Unprocessable
// Content with a SubmitRejection and returns true. A failed submission
// (status 400 or above) frees the user's key at once, so the same user may
// submit again straight away and be accepted, where a duplicate of an
// accepted submission gets 429.
//
// Otherwise it returns false and writes nothing, and the example answers
// the submission as accepted, as it always did: other bodies, such as JSON,
// are left unread, and a malformed query or form keeps its well-formed
// pairs. Only a form body that cannot be read at all gets a problem, and
// true: 413 over 64 KiB, 400 when the client stalls past the server's
// ReadTimeout or breaks off.
//
// A browser (WantsHTML) gets each of these answers as an HTML page with the
// same status instead of JSON or problem+json. The form it read is left in
// r.PostForm, for the handler to show.
func RejectSubmission(w http.ResponseWriter, r *http.Request, server string) bool {
	fail, err := failRequested(w, r)
	if err != nil {
		status, detail := http.StatusBadRequest, "The form could not be read."
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status, detail = http.StatusRequestEntityTooLarge, "The form is too large."
		}
		if WantsHTML(r) {
			errorPage(w, status, detail, server)
		} else {
			WriteProblem(w, status, detail)
		}
		return true
	}
	if !fail {
		return false
	}
	if WantsHTML(r) {
		writePage(w, http.StatusUnprocessableEntity, "failed", pageData{Server: server})
		return true
	}
	b, err := json.Marshal(SubmitRejection{
		Status: "rejected",
		Reason: "fail=1 asked for a failed submission; nothing was submitted, so you may submit again at once",
		Server: server,
	})
	if err != nil { // cannot happen: only strings
		b = []byte(`{"status":"rejected"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	_, _ = w.Write(append(b, '\n'))
	return true
}

// failRequested reports whether r's query or form body has fail=1.
func failRequested(w http.ResponseWriter, r *http.Request) (bool, error) {
	query, _ := url.ParseQuery(r.URL.RawQuery) // the well-formed pairs of a malformed query
	if slices.Contains(query["fail"], "1") {
		return true, nil
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return false, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxForm))
	if err != nil {
		return false, err
	}
	form, _ := url.ParseQuery(string(body))
	r.PostForm = form // the body is read: keep the form for the handler
	return slices.Contains(form["fail"], "1"), nil
}

// problem is an RFC 9457 problem document.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// WriteProblem answers with status and an application/problem+json body
// whose detail is detail, in the form the throttle middleware uses for its
// own rejections.
func WriteProblem(w http.ResponseWriter, status int, detail string) {
	b, err := json.Marshal(problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail})
	if err != nil { // cannot happen
		b = []byte(`{}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
