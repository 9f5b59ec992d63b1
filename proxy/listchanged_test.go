package proxy

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// textPrompt is a prompt handler that answers text.
func textPrompt(text string) sdk.PromptHandler {
	return func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text + req.Params.Arguments["topic"]}}}}, nil
	}
}

// textResource is a resource handler that answers text for the URI read.
func textResource(text string) sdk.ResourceHandler {
	return func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text + req.Params.URI}}}, nil
	}
}

// listTold is what one host session was told of list changes: one
// signal a kind waits at most.
type listTold struct {
	version            string
	cs                 *sdk.ClientSession
	prompts, resources chan struct{}
}

func newListTold(version string) *listTold {
	return &listTold{version: version, prompts: make(chan struct{}, 1), resources: make(chan struct{}, 1)}
}

// tell signals c without blocking: one signal waits at most.
func tell(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// options are a host's client options that record what it is told.
func (w *listTold) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { tell(w.prompts) },
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { tell(w.resources) },
	}
}

// heard says whether c was signalled within d.
func (w *listTold) heard(c chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
	}
	return false
}

// forget drops a signal already waiting on c.
func (w *listTold) forget(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// recordSent makes a listTold of what server s sends its clients: a
// signal once a notifications/prompts/list_changed or
// notifications/resources/list_changed is written to a connection. The
// SDK sends each kind from its own 10 ms debounce timer, so the order of
// the two on the wire is only known by waiting for the first.
func recordSent(s *sdk.Server) *listTold {
	w := newListTold("sent")
	s.AddSendingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			switch {
			case err != nil:
			case method == "notifications/prompts/list_changed":
				tell(w.prompts)
			case method == "notifications/resources/list_changed":
				tell(w.resources)
			}
			return res, err
		}
	})
	return w
}

// settle waits until each server has sent the prompts and resources
// list_changed that its changes so far started, so that none is still
// on its debounce timer when the proxy restarts: one fired then would
// reach the new proxy, and its hosts, as a change made after they
// connected.
func settle(t *testing.T, sent ...*listTold) {
	t.Helper()
	for _, s := range sent {
		mustf(t, s.heard(s.prompts, 10*time.Second) && s.heard(s.resources, 10*time.Second), "a server did not send its list_changed to the proxy")
	}
}

// While the proxy runs, a second server whose prompts the configuration
// denies adds a prompt, then a resource: no host is told of the prompt,
// which is not offered, and every host is told of the resource. Then a
// server whose prompts and resources are forwarded adds a resource, a
// resource template and a prompt: every host session (on the current
// protocol, which hears through subscriptions/listen, and on 2025-11-25)
// is sent notifications/prompts/list_changed and
// notifications/resources/list_changed, which the proxy advertised with
// listChanged, and gets the prompt and reads the resource and a URI of the
// template through the proxy before it lists them (the proxy forgot the
// server's listing), then lists them.
func TestForward_UpstreamListChangedReachesTheHost(t *testing.T) {
	dn := newTestUpstream(t)
	dnSent := recordSent(dn.server)
	h := newHarness(t, func(doc map[string]any) {
		up := doc["servers"].([]any)[0].(map[string]any)
		doc["servers"] = append(doc["servers"].([]any), map[string]any{
			"name": "dn", "endpoint": dn.url, "manifest": "dn.manifest.json", "default_timeout": "5s",
			"rules": up["rules"], "surfaces": map[string]any{"prompts": "deny"},
		})
	})
	upSent := recordSent(h.up.server)
	// Each server offers prompts and resources when the proxy connects.
	h.up.server.AddPrompt(&sdk.Prompt{Name: "first"}, textPrompt("first "))
	h.up.server.AddResource(&sdk.Resource{URI: "file:///first", Name: "first"}, textResource("first "))
	dn.server.AddPrompt(&sdk.Prompt{Name: "dn-first"}, textPrompt("dn "))
	dn.server.AddResource(&sdk.Resource{URI: "file:///dn/first", Name: "dn-first"}, textResource("dn "))
	settle(t, upSent, dnSent)
	h.restart(nil)

	ctx := context.Background()
	var ws []*listTold
	for _, version := range []string{"", "2025-11-25"} {
		w := newListTold(version)
		w.cs = hostClientOn(t, h, w.options(), version)
		caps := w.cs.InitializeResult().Capabilities
		mustf(t, caps.Prompts != nil && caps.Prompts.ListChanged && caps.Resources != nil && caps.Resources.ListChanged,
			"%q: prompts and resources are not advertised with listChanged: %+v", version, caps)
		lp, err := w.cs.ListPrompts(ctx, nil)
		mustf(t, err == nil && len(lp.Prompts) == 1 && lp.Prompts[0].Name == "first", "%q: prompts before the change: %v %v", version, lp, err)
		lr, err := w.cs.ListResources(ctx, nil)
		mustf(t, err == nil && len(lr.Resources) == 2, "%q: resources before the change: %v %v", version, lr, err)
		lt, err := w.cs.ListResourceTemplates(ctx, nil)
		mustf(t, err == nil && len(lt.ResourceTemplates) == 0, "%q: templates before the change: %v %v", version, lt, err)
		ws = append(ws, w)
	}

	deniedPromptNotPassedOn(t, dn, dnSent, ws)
	forwardedChangesReachTheHosts(t, h, upSent, ws)
}

// deniedPromptNotPassedOn: dn's prompt change is on the wire before its
// resource change starts, and the proxy hears a connection's
// notifications in order and passes on every mark it took at once, so
// once a host is told of the resource change the proxy has already
// dropped (or wrongly passed on) the prompt change. Nothing else changed
// since the restart, so a prompts notification now can only be that one;
// the wait for it covers the proxy's own 10 ms debounce to its hosts.
func deniedPromptNotPassedOn(t *testing.T, dn *testUpstream, dnSent *listTold, ws []*listTold) {
	t.Helper()
	ctx := context.Background()
	dn.server.AddPrompt(&sdk.Prompt{Name: "hidden"}, textPrompt("hidden "))
	mustf(t, dnSent.heard(dnSent.prompts, 10*time.Second), "dn did not send its prompts list_changed")
	dn.server.AddResource(&sdk.Resource{URI: "file:///dn/second", Name: "dn-second"}, textResource("dn "))
	for _, w := range ws {
		mustf(t, w.heard(w.resources, 10*time.Second), "%q: the forwarded resource change of dn was not sent", w.version)
		mustf(t, !w.heard(w.prompts, 500*time.Millisecond), "%q: a host was told of a change to prompts the proxy does not forward", w.version)
		lp, err := w.cs.ListPrompts(ctx, nil)
		mustf(t, err == nil && len(lp.Prompts) == 1 && lp.Prompts[0].Name == "first", "%q: prompts after dn's change: %v %v", w.version, lp, err)
		rr, err := w.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///dn/second"})
		mustf(t, err == nil && len(rr.Contents) == 1 && rr.Contents[0].Text == "dn file:///dn/second", "%q: read of dn's new resource: %v %v", w.version, rr, err)
	}
}

// forwardedChangesReachTheHosts: up's resource changes are on the wire
// before its prompt change starts, so a host told of the prompt change is
// one whose proxy has already forgotten up's resource listing.
func forwardedChangesReachTheHosts(t *testing.T, h *harness, upSent *listTold, ws []*listTold) {
	t.Helper()
	ctx := context.Background()
	for _, w := range ws {
		// A resources notification of dn's change that the SDK split in
		// two must not count as one of up's.
		w.forget(w.resources)
	}
	h.up.server.AddResource(&sdk.Resource{URI: "file:///notes", Name: "notes", MIMEType: "text/plain"}, textResource("the notes at "))
	h.up.server.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "file:///t/{name}", Name: "t"}, textResource("templated "))
	mustf(t, upSent.heard(upSent.resources, 10*time.Second), "up did not send its resources list_changed")
	h.up.server.AddPrompt(&sdk.Prompt{Name: "brief", Description: "Briefs the reader.", Arguments: []*sdk.PromptArgument{{Name: "topic"}}}, textPrompt("brief on "))
	for _, w := range ws {
		mustf(t, w.heard(w.prompts, 10*time.Second), "%q: notifications/prompts/list_changed was not sent", w.version)
		mustf(t, w.heard(w.resources, 10*time.Second), "%q: notifications/resources/list_changed was not sent", w.version)
		gp, err := w.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "brief", Arguments: map[string]string{"topic": "tides"}})
		mustf(t, err == nil && len(gp.Messages) == 1 && gp.Messages[0].Content.(*sdk.TextContent).Text == "brief on tides",
			"%q: get after the change: %v %v", w.version, gp, err)
		// Read before any listing: the proxy routes by what the server
		// lists now, not by the listing it read before the change.
		rr, err := w.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///t/x"})
		mustf(t, err == nil && len(rr.Contents) == 1 && rr.Contents[0].Text == "templated file:///t/x", "%q: read of the template: %v %v", w.version, rr, err)
		rr, err = w.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///notes"})
		mustf(t, err == nil && len(rr.Contents) == 1 && rr.Contents[0].Text == "the notes at file:///notes", "%q: read after the change: %v %v", w.version, rr, err)
		lp, err := w.cs.ListPrompts(ctx, nil)
		mustf(t, err == nil && len(lp.Prompts) == 2 && lp.Prompts[0].Name == "brief" && lp.Prompts[0].Description == "Briefs the reader.",
			"%q: prompts after the change: %v %v", w.version, lp, err)
		for _, pr := range lp.Prompts {
			mustf(t, pr.Name != "hidden", "%q: a denied server's prompt was offered", w.version)
		}
		lr, err := w.cs.ListResources(ctx, nil)
		mustf(t, err == nil && len(lr.Resources) == 4, "%q: resources after the change: %v %v", w.version, lr, err)
		lt, err := w.cs.ListResourceTemplates(ctx, nil)
		mustf(t, err == nil && len(lt.ResourceTemplates) == 1 && lt.ResourceTemplates[0].URITemplate == "file:///t/{name}", "%q: templates: %v %v", w.version, lt, err)
	}
}

// A server that floods list_changed cannot grow what the proxy holds or
// stall its reader: each notification only marks its server's list, so at
// most one mark per server and list waits, and the hosts are still told.
func TestForward_ListChangedFloodIsBounded(t *testing.T) {
	h := newHarness(t, nil)
	upSent := recordSent(h.up.server)
	h.up.server.AddPrompt(&sdk.Prompt{Name: "first"}, textPrompt("first "))
	h.up.server.AddResource(&sdk.Resource{URI: "file:///first", Name: "first"}, textResource("first "))
	settle(t, upSent)
	h.restart(nil)
	w := newListTold("")
	cs := hostClient(t, h, w.options())
	caps := cs.InitializeResult().Capabilities
	mustf(t, caps.Prompts.ListChanged && caps.Resources.ListChanged, "prompts and resources are not advertised with listChanged: %+v", caps)
	n := h.p.notifications(h.cfg.Servers[0])
	done := make(chan int)
	go func() {
		most := 0
		for range 100000 {
			n.PromptListChanged()
			n.ResourceListChanged()
			h.p.changes.mu.Lock()
			most = max(most, len(h.p.changes.m))
			h.p.changes.mu.Unlock()
		}
		done <- most
	}()
	select {
	case most := <-done:
		mustf(t, most <= 2, "%d changes were held at once for one server", most)
	case <-time.After(60 * time.Second):
		t.Fatal("the hook blocked")
	}
	mustf(t, w.heard(w.prompts, 10*time.Second) && w.heard(w.resources, 10*time.Second), "the host was not told after the flood")
	lp, err := cs.ListPrompts(context.Background(), nil)
	mustf(t, err == nil && len(lp.Prompts) == 1, "prompts after the flood: %v %v", lp, err)
}
