package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// newOAuthHarness is the harness on the upstream behind OAuth: the
// configuration names it with an oauth entry, Login stores the tokens
// (the scripted browser follows the URL), and the proxy is pinned and
// started with them.
func newOAuthHarness(t testing.TB, as *testAS, edit func(doc map[string]any)) (*harness, *protectedUpstream) {
	t.Helper()
	pu := newProtectedUpstream(t, as)
	h := &harness{t: t, dir: t.TempDir(), up: pu.upstream, stderr: &syncBuffer{},
		clock: &clock{t: time.Now().UTC()}, events: make(chan agentrt.Event, 4096)}
	h.cfgDoc = baseConfig(pu.upstream)
	s := h.cfgDoc["servers"].([]any)[0].(map[string]any)
	s["endpoint"] = pu.mcpURL
	s["oauth"] = map[string]any{}
	if edit != nil {
		edit(h.cfgDoc)
	}
	h.writeConfig()
	h.login()
	h.pin()
	return h, pu
}

// login runs Login with the scripted browser step.
func (h *harness) login() string {
	h.t.Helper()
	browsed := make(chan error, 1)
	path, err := Login(context.Background(), h.cfg, "up", LoginOptions{Stderr: h.stderr, Timeout: 20 * time.Second,
		Open: func(u string) error {
			go func() { browsed <- scriptedBrowser(h.t, u) }()
			return nil
		}})
	if err != nil {
		h.t.Fatalf("login: %v\n%s", err, h.stderr)
	}
	if err := <-browsed; err != nil {
		h.t.Fatalf("the browser step: %v", err)
	}
	return path
}

// An access token that expired is refreshed before it is sent: the
// server accepts only the refreshed one, and the rotated refresh token is
// written back to the owner-only token file, so the next start uses it.
func TestRemote_ExpiredTokenIsRefreshed(t *testing.T) {
	as := newTestAS(t)
	as.setTTL(time.Second)
	h, pu := newOAuthHarness(t, as, nil)
	path := h.cfg.Servers[0].OAuth.Tokens
	before, err := readTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	as.setTTL(time.Hour)
	time.Sleep(1100 * time.Millisecond) // the login's access token is now expired at the server
	refreshes := as.count("refresh_token")
	h.start()
	mustf(t, h.expect("", "up_read", `{"path":"a"}`) == "content of a", "the read did not answer")
	mustf(t, as.count("refresh_token") > refreshes, "no refresh was made")
	after, err := readTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	mustf(t, after.Token.AccessToken != before.Token.AccessToken && after.Token.RefreshToken != before.Token.RefreshToken,
		"the token file was not rewritten with the refreshed tokens")
	mustf(t, fileMode(t, path) == 0o600, "the token file is %v after the refresh", fileMode(t, path))
	acc := pu.acceptedTokens()
	mustf(t, !slices.Contains(acc[len(acc)-1:], before.Token.AccessToken) && slices.Contains(acc, after.Token.AccessToken),
		"the server was sent %d tokens, the last not the refreshed one", len(acc))

	// A restart uses the stored, rotated refresh token (the first is spent).
	h.stop()
	h.start()
	mustf(t, h.expect("", "up_read", `{"path":"b"}`) == "content of b", "the read after a restart did not answer")
}

// When the authorization server revokes the login, a call answers
// UNAVAILABLE and did not run, the model is told nothing of logins, and
// stderr and check say `agentrt-proxy login up`. A new login brings the
// tools back without a restart.
func TestRemote_RevokedLoginAnswersUnavailableAndSaysSoOnStderr(t *testing.T) {
	as := newTestAS(t)
	// The write runs without approval here, so the first call after the
	// revocation is a write that reaches the transport: it must be
	// recorded as never sent, not as an unknown outcome for an operator.
	h, _ := newOAuthHarness(t, as, func(doc map[string]any) { rules(doc, "write")["outcome"] = "allow" })
	h.start()
	h.expect("", "up_read", `{"path":"a"}`)
	as.revokeAll()
	for _, call := range []struct{ tool, args string }{{"up_write", `{"path":"w","content":"x"}`}, {"up_read", `{"path":"b"}`}, {"up_write", `{"path":"v","content":"y"}`}} {
		got := h.expect(StatusUnavailable, call.tool, call.args)
		for _, leak := range []string{"login", "agentrt-proxy", "token", "oauth", "401"} {
			mustf(t, !strings.Contains(strings.ToLower(got), leak), "the model was told %q: %s", leak, got)
		}
	}
	mustf(t, h.up.count() == 0, "a write ran with a revoked login")
	mustf(t, len(h.pending()) == 0, "an approval was opened for a call that cannot run")
	mustf(t, strings.Contains(h.stderr.String(), "agentrt-proxy login up"), "stderr does not say to log in:\n%s", h.stderr)
	mustf(t, strings.Count(h.stderr.String(), "needs a new login") == 1, "stderr should say it once:\n%s", h.stderr)

	_, err := Check(context.Background(), h.cfg)
	mustf(t, err != nil && strings.Contains(err.Error(), "agentrt-proxy login up"), "check with a revoked login: %v", err)

	h.login()
	mustf(t, h.expect("", "up_read", `{"path":"d"}`) == "content of d", "a new login did not bring the tool back")
	_, err = Check(context.Background(), h.cfg)
	mustf(t, err == nil, "check after a new login: %v", err)
	// No token file but the configured one.
	entries, _ := os.ReadDir(filepath.Dir(h.cfg.Servers[0].OAuth.Tokens))
	for _, e := range entries {
		mustf(t, !strings.HasPrefix(e.Name(), ".agentrt-proxy-tokens-"), "a temporary token file was left: %s", e.Name())
	}
}

// BenchmarkProxyCallOAuth is an allowed read through the proxy to the
// upstream behind OAuth (the stored login's token on every request, the
// token file's stamp checked on every call) against the same read to the
// same tools without authorization, in the same run: the cost of OAuth at
// run time is oauth - plain.
func BenchmarkProxyCallOAuth(b *testing.B) {
	plain := benchHarness(b)
	as := newTestAS(b)
	oh, _ := newOAuthHarness(b, as, nil)
	oh.start()
	for _, c := range []struct {
		name string
		h    *harness
	}{{"plain", plain}, {"oauth", oh}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				res, err := c.h.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "up_read", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"f%d"}`, i))})
				if err != nil || res.IsError {
					b.Fatalf("%v %v", err, res)
				}
			}
		})
	}
}

// A server whose login does not work when the proxy starts (revoked, or
// never made) still has its pinned tools listed; they answer UNAVAILABLE
// with nothing about logins for the model, stderr and check name
// `agentrt-proxy login up` once, and a new login brings them back without
// a restart.
func TestRemote_LoginBrokenAtStartListsToolsThatAnswerUnavailable(t *testing.T) {
	as := newTestAS(t)
	h, _ := newOAuthHarness(t, as, nil)
	tokens := h.cfg.Servers[0].OAuth.Tokens
	for _, broken := range []struct {
		name  string
		spoil func()
	}{
		{"revoked", as.revokeAll},
		{"no login", func() { mustf(t, os.Remove(tokens) == nil, "remove the token file") }},
	} {
		broken.spoil()
		h.stderr = &syncBuffer{}
		h.start()
		lt, err := h.cs.ListTools(context.Background(), nil)
		mustf(t, err == nil, "%s: list tools: %v", broken.name, err)
		var names []string
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
		}
		mustf(t, slices.Contains(names, "up_read") && slices.Contains(names, "up_write"), "%s: the pinned tools are not listed: %v", broken.name, names)
		for _, call := range []struct{ tool, args string }{{"up_read", `{"path":"a"}`}, {"up_write", `{"path":"w","content":"x"}`}} {
			got := h.expect(StatusUnavailable, call.tool, call.args)
			for _, leak := range []string{"login", "agentrt-proxy", "token", "oauth", "401"} {
				mustf(t, !strings.Contains(strings.ToLower(got), leak), "%s: the model was told %q: %s", broken.name, leak, got)
			}
		}
		mustf(t, h.up.count() == 0, "%s: a write ran without a working login", broken.name)
		mustf(t, len(h.pending()) == 0, "%s: an approval was opened for a call that cannot run", broken.name)
		mustf(t, strings.Count(h.stderr.String(), "needs a new login") == 1 && strings.Contains(h.stderr.String(), "`agentrt-proxy login up`"),
			"%s: stderr should say once to log in:\n%s", broken.name, h.stderr)
		_, err = Check(context.Background(), h.cfg)
		mustf(t, err != nil && strings.Contains(err.Error(), "agentrt-proxy login up"), "%s: check: %v", broken.name, err)

		h.login()
		got := text(h.call("up_read", `{"path":"d"}`))
		mustf(t, got == "content of d", "%s: a new login did not bring the tool back: %s\n%s", broken.name, got, h.stderr)
		h.stop()
	}
}
