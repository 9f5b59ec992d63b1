package credentials

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Every OAuth request the proxy makes (protected-resource discovery,
// authorization-server metadata, the token request carrying a secret)
// goes through HTTPClient; a 302 from any of them to a recording
// listener reaches nothing there. Before, no test could fail if the
// client followed a redirect.
func TestOAuth_RedirectsAreNotFollowed(t *testing.T) {
	rec := &recorder{}
	target := httptest.NewServer(rec.wrap(http.NotFoundHandler()))
	defer target.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirecting.Close()
	ctx := context.Background()
	client := HTTPClient(redirecting.URL + "/mcp")
	challenge := `Bearer resource_metadata="` + redirecting.URL + `/.well-known/oauth-protected-resource/mcp"`
	prm, err := resourceMetadata(ctx, "up", client, mustChallenges(t, challenge), redirecting.URL+"/mcp")
	if err != nil || prm.AuthorizationServers[0] != redirecting.URL {
		// Every metadata URL redirected: the fallback is the origin.
		t.Fatalf("discovery: %+v %v", prm, err)
	}
	if asm, err := auth.GetAuthServerMetadata(ctx, redirecting.URL, client); err == nil && asm != nil {
		t.Fatalf("authorization-server metadata through a redirect: %+v", asm)
	}
	cc := &clientcredentials.Config{ClientID: "m2m", ClientSecret: "the-secret", TokenURL: redirecting.URL + "/token"}
	if _, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, client)); err == nil {
		t.Fatal("a token through a redirect")
	}
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("the redirect target received %q", got)
	}
}

func mustChallenges(t *testing.T, header string) []oauthex.Challenge {
	t.Helper()
	c, err := oauthex.ParseWWWAuthenticate([]string{header})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recorder keeps the path of every request a handler is sent.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (rc *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, r.Method+" "+r.URL.Path)
		rc.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (rc *recorder) all() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.reqs...)
}
