package console

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"net/http"

	agentrt "github.com/agentrt/agentrt"
)

// NewTestSession enrolls a key-file approver called name (or finds the
// unremoved one) and makes a signed-in session for it, as a passkey
// sign-in would, returning its cookie.
func NewTestSession(h *Handler, name string) *http.Cookie {
	ctx := context.Background()
	var ap agentrt.EnrolledApprover
	aps, _ := h.cfg.Store.ListApprovers(ctx)
	for _, a := range aps {
		if a.Name == name && !a.Removed() {
			ap = a
		}
	}
	if ap.ID == "" {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		der, _ := x509.MarshalPKIXPublicKey(pub)
		var err error
		ap, err = h.op.EnrollApprover(ctx, agentrt.NewApprover{Name: name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "test"})
		if err != nil {
			panic(err)
		}
	}
	rec := &cookieRecorder{h: http.Header{}}
	h.newSession(rec, ap)
	c, _ := http.ParseSetCookie(rec.h.Get("Set-Cookie"))
	return c
}

// Polls is how many shared store polls the handler's streams made.
func Polls(h *Handler) int64 { return h.hub.polls() }

// Ceremonies is how many begun ceremonies the handler holds.
func Ceremonies(h *Handler) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ceremonies.len()
}

type cookieRecorder struct{ h http.Header }

func (r *cookieRecorder) Header() http.Header         { return r.h }
func (r *cookieRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *cookieRecorder) WriteHeader(int)             {}
