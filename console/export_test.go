package console

import (
	"net/http"

	agentrt "github.com/agentrt/agentrt"
)

// NewTestSession makes a signed-in session for a benchmark and returns its
// cookie, as a passkey sign-in would.
func NewTestSession(h *Handler, name string) *http.Cookie {
	rec := &cookieRecorder{h: http.Header{}}
	h.newSession(rec, agentrt.Approver{ID: "bench", Name: name})
	c, _ := http.ParseSetCookie(rec.h.Get("Set-Cookie"))
	return c
}

type cookieRecorder struct{ h http.Header }

func (r *cookieRecorder) Header() http.Header         { return r.h }
func (r *cookieRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *cookieRecorder) WriteHeader(int)             {}
