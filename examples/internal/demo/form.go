package demo

import (
	"crypto/rand"
	"net/http"
	"time"
)

// UserCookie is the cookie that identifies a browser's user to POST
// /submit and GET /search when no X-User-ID header is sent: GET / sets it
// to a random value, and every tab of the browser then sends it. The three
// examples key on it alike:
//
//	keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.Cookie(demo.UserCookie), keyfuncs.RemoteIP())
const UserCookie = "demo_user"

// SubmitWork is how long an order submitted from the form of GET / (a
// browser's POST /submit, see WantsHTML) takes to place. A server that answers at
// once hides double clicks: the page is replaced before the second click,
// and a browser drops a second submission of a form that comes before the
// first request is even sent. With a second of work the second click of a
// double click, or another tab's submission, reaches the server while the
// first is still being processed, as on a busy shop, and is turned away.
// JSON clients are answered at once, as before.
const SubmitWork = time.Second

// FormPage returns the handler of GET /: an HTML page with an order form
// that posts to /submit as a browser form does
// (application/x-www-form-urlencoded). It gives a browser that has no
// UserCookie a new random one (HttpOnly, SameSite=Lax, Path=/), which its
// later requests, from every tab, carry: the page says the user is that
// cookie. The page is HTML whatever the Accept header: there is no JSON
// form.
func FormPage(s Settings, server string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(UserCookie); err != nil || c.Value == "" {
			http.SetCookie(w, &http.Cookie{
				Name:     UserCookie,
				Value:    rand.Text(), // 128 random bits, base32
				Path:     "/",
				HttpOnly: true,
				SameSite: http.SameSiteLaxMode,
			})
		}
		writePage(w, http.StatusOK, "form", pageData{
			Server: server,
			Cookie: UserCookie,
			Window: s.Window.String(),
			Work:   SubmitWork.String(),
		})
	})
}

// AcceptedPage answers an accepted POST /submit from a browser
// (WantsHTML): it works for SubmitWork, then sends an "accepted" page
// showing the order, and returns true. It returns false, having written
// nothing, for every other client, which the example answers in JSON.
//
// The work is not cut short when the browser gives up on the request (a
// double click cancels the first submission's page in favour of the
// second's): the order was accepted, and is placed, as a real shop would;
// only the page is lost. It takes well under ShutdownGrace.
func AcceptedPage(w http.ResponseWriter, r *http.Request, server string) bool {
	if !WantsHTML(r) {
		return false
	}
	time.Sleep(SubmitWork)
	// RejectSubmission has read the form into r.PostForm; this parses it
	// when it has not.
	item, quantity := r.PostFormValue("item"), r.PostFormValue("quantity")
	if item == "" {
		item = "(no item)"
	}
	if quantity == "" {
		quantity = "1"
	}
	writePage(w, http.StatusOK, "accepted", pageData{
		Server: server, Item: item, Quantity: quantity, Who: who(r),
	})
	return true
}

// who says what the key function of /submit identified r's user by, in the
// order it tries them.
func who(r *http.Request) string {
	if r.Header.Get("X-User-ID") != "" {
		return "the X-User-ID header"
	}
	if c, err := r.Cookie(UserCookie); err == nil && c.Value != "" {
		return "the " + UserCookie + " cookie, shared by every tab of this browser"
	}
	return "your IP address (this browser sent no " + UserCookie + " cookie)"
}
