//lint:file-ignore SA1019 the standby test checks that the logging level a host set (deprecated in the 2026-07-28 protocol, still sent in the deprecation window) reaches a server that loads after a new login.

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
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// newOAuthHarness is the harness on the upstream behind OAuth: the
// configuration names it with an oauth entry, Login stores the tokens
// (the scripted browser follows the URL), and the proxy is pinned and
// started with them.
func newOAuthHarness(t testing.TB, as *testAS, edit func(doc map[string]any)) (*harness, *protectedUpstream) {
	t.Helper()
	pu := newProtectedUpstream(t, as)
	h := &harness{t: t, dir: t.TempDir(), up: pu.testUpstream, stderr: &syncBuffer{},
		clock: enginekit.ClockAt(time.Now().UTC()), events: make(chan agentrt.Event, 4096)}
	h.cfgDoc = baseConfig(pu.testUpstream)
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
	before, err := credentials.ReadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	as.setTTL(time.Hour)
	time.Sleep(1100 * time.Millisecond) // the login's access token is now expired at the server
	refreshes := as.count("refresh_token")
	h.start()
	mustf(t, h.expect("", "up_read", `{"path":"a"}`) == "content of a", "the read did not answer")
	mustf(t, as.count("refresh_token") > refreshes, "no refresh was made")
	after, err := credentials.ReadTokens(path)
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

// A server whose login did not work at start gets its prompts and
// resources back without a restart once a new login is made. The proxy
// advertised them from the server's configuration, with listChanged; a
// host listing before the login sees none of the server's and no error,
// and nothing about logins. After the login, whether a tool call or a
// host that only lists prompts loads the server, every host session (on
// the current protocol, which hears through subscriptions/listen, and on
// 2025-11-25) is sent notifications/prompts/list_changed and
// notifications/resources/list_changed, and lists, gets and reads the
// server's prompt and resource through the proxy; the logging level a
// host asked for before the login reaches the server as it loads.
func TestRemote_NewLoginBringsBackPromptsAndResourcesWithoutARestart(t *testing.T) {
	as := newTestAS(t)
	h, pu := newOAuthHarness(t, as, nil)
	pu.server.AddPrompt(&sdk.Prompt{Name: "brief", Description: "Briefs the reader.", Arguments: []*sdk.PromptArgument{{Name: "topic"}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "brief on " + req.Params.Arguments["topic"]}}}}, nil
		})
	pu.server.AddResource(&sdk.Resource{URI: "file:///notes", Name: "notes", MIMEType: "text/plain"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "file:///notes", MIMEType: "text/plain", Text: "the notes"}}}, nil
		})
	// The logging level a host asked for before the login reaches the
	// server once it loads.
	levels := make(chan sdk.LoggingLevel, 8)
	pu.server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "logging/setLevel" {
				select {
				case levels <- req.GetParams().(*sdk.SetLoggingLevelParams).Level:
				default:
				}
			}
			return next(ctx, method, req)
		}
	})
	ctx := context.Background()
	noLeak := func(what string, err error) {
		t.Helper()
		for _, leak := range []string{"login", "agentrt-proxy", "token", "oauth", "401"} {
			mustf(t, !strings.Contains(strings.ToLower(err.Error()), leak), "%s: the host was told %q: %v", what, leak, err)
		}
	}
	type watcher struct {
		version            string
		cs                 *sdk.ClientSession
		prompts, resources chan struct{}
	}
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	heard := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}
	for _, via := range []struct {
		name  string
		level sdk.LoggingLevel
		load  func()
	}{
		{"a tool call", "warning", func() {
			got := text(h.call("up_read", `{"path":"d"}`))
			mustf(t, got == "content of d", "a tool call after the login: %s\n%s", got, h.stderr)
		}},
		{"a prompts listing", "error", func() {
			lp, err := h.cs.ListPrompts(ctx, nil)
			mustf(t, err == nil && len(lp.Prompts) == 1 && lp.Prompts[0].Name == "brief", "the listing after the login: %v %v\n%s", lp, err, h.stderr)
		}},
	} {
		as.revokeAll()
		h.stderr = &syncBuffer{}
		h.start()
		var ws []*watcher
		for _, version := range []string{"", "2025-11-25"} {
			w := &watcher{version: version, prompts: make(chan struct{}, 1), resources: make(chan struct{}, 1)}
			w.cs = hostClientOn(t, h, &sdk.ClientOptions{
				PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { signal(w.prompts) },
				ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { signal(w.resources) },
			}, version)
			ws = append(ws, w)
			caps := w.cs.InitializeResult().Capabilities
			mustf(t, caps.Prompts != nil && caps.Prompts.ListChanged && caps.Resources != nil && caps.Resources.ListChanged,
				"%s %q: prompts and resources are not advertised with listChanged: %+v", via.name, version, caps)
			lp, err := w.cs.ListPrompts(ctx, nil)
			mustf(t, err == nil && len(lp.Prompts) == 0, "%s %q: prompts before the login: %v %v", via.name, version, lp, err)
			lr, err := w.cs.ListResources(ctx, nil)
			mustf(t, err == nil && len(lr.Resources) == 0, "%s %q: resources before the login: %v %v", via.name, version, lr, err)
			_, err = w.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "brief"})
			mustf(t, err != nil, "%s %q: a prompt was got before the login", via.name, version)
			noLeak("get", err)
			_, err = w.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///notes"})
			mustf(t, err != nil, "%s %q: a resource was read before the login", via.name, version)
			noLeak("read", err)
			if version != "" { // logging/setLevel is the older protocols'
				mustf(t, w.cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: via.level}) == nil, "%s: the level before the login", via.name)
			}
		}
		select {
		case l := <-levels:
			t.Fatalf("%s: the server was given level %s before the login", via.name, l)
		default:
		}
		for _, w := range ws {
			select {
			case <-w.prompts:
				t.Fatalf("%s %q: told of a prompts change before the login", via.name, w.version)
			case <-w.resources:
				t.Fatalf("%s %q: told of a resources change before the login", via.name, w.version)
			default:
			}
		}

		h.login()
		via.load()
		mustf(t, strings.Contains(h.stderr.String(), "server up is loaded after a new login"), "%s: stderr:\n%s", via.name, h.stderr)
		select {
		case l := <-levels:
			mustf(t, l == via.level, "%s: the server was given level %s, not %s", via.name, l, via.level)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the level a host asked for did not reach the server", via.name)
		}
		for _, w := range ws {
			mustf(t, heard(w.prompts), "%s %q: notifications/prompts/list_changed was not sent", via.name, w.version)
			mustf(t, heard(w.resources), "%s %q: notifications/resources/list_changed was not sent", via.name, w.version)
			lp, err := w.cs.ListPrompts(ctx, nil)
			mustf(t, err == nil && len(lp.Prompts) == 1 && lp.Prompts[0].Name == "brief" && lp.Prompts[0].Description == "Briefs the reader.",
				"%s %q: prompts after the login: %v %v", via.name, w.version, lp, err)
			gp, err := w.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "brief", Arguments: map[string]string{"topic": "tides"}})
			mustf(t, err == nil && len(gp.Messages) == 1, "%s %q: get after the login: %v %v", via.name, w.version, gp, err)
			mustf(t, gp.Messages[0].Content.(*sdk.TextContent).Text == "brief on tides", "%s %q: the prompt: %+v", via.name, w.version, gp.Messages[0].Content)
			lr, err := w.cs.ListResources(ctx, nil)
			mustf(t, err == nil && len(lr.Resources) == 1 && lr.Resources[0].URI == "file:///notes", "%s %q: resources after the login: %v %v", via.name, w.version, lr, err)
			rr, err := w.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///notes"})
			mustf(t, err == nil && len(rr.Contents) == 1 && rr.Contents[0].Text == "the notes", "%s %q: read after the login: %v %v", via.name, w.version, rr, err)
		}
		got := text(h.call("up_read", `{"path":"e"}`))
		mustf(t, got == "content of e", "%s: the tool after the login: %s", via.name, got)
		h.stop()
	}
}
