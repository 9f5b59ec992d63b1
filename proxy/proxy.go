package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/token"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy/internal/asks"
	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/proxy/internal/seal"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/trace"
)

// Version is the proxy's version, as it introduces itself to a host.
const Version = "0.1.0"

// serverName is how the proxy introduces itself to a host; it names
// neither agentrt nor anything of the operator's.
const serverName = "gated-tools"

// Options are the proxy's process-level settings; zero means the default
// each field names.
type Options struct {
	// Stderr receives one sanitized line per opened approval, and load
	// reports. Nil discards them.
	Stderr io.Writer
	// Now is the clock recorded times come from; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often a held call looks for a decision; zero
	// means 100ms.
	PollInterval time.Duration
	// ProgressInterval is how often a held call sends a progress
	// notification when the host gave a token; zero means 1s.
	ProgressInterval time.Duration
	// Observer hears each event of the proxy's runs after its commit; nil
	// hears nothing.
	Observer agentrt.Observer
	// Lookup reads the environment secrets come from; nil means the
	// process's own.
	Lookup func(string) (string, bool)
}

// Proxy is a running proxy: the upstream tools, the store, the index and
// the gate every call goes through.
type Proxy struct {
	cfg   *Config
	opts  Options
	store *sqlite.Store
	ix    *index.Index
	// sealer seals the requestState of calls held for MCP 2026-07-28
	// hosts (revision.go), under a key kept beside the index.
	sealer *seal.Sealer
	gate   *agentrt.Gate
	policy *gatePolicy
	tools  map[string]*ptool
	order  []*ptool
	// servers are the configured servers, in configuration order
	// (upstream.go); the slice is written only in New.
	servers []*upstream
	server  *sdk.Server

	// reports are what Load said about each server.
	reports []*mcp.Report

	inflight sync.WaitGroup
	stderrMu sync.Mutex

	// ups are the connected servers, whose surfaces beyond tools are
	// forwarded (forward.go), grown when a standby server loads: read them
	// with upstreams.
	// hosts are the host-facing servers their log messages go to.
	upsMu   sync.RWMutex
	ups     []*upstream
	hostsMu sync.Mutex
	hosts   []*sdk.Server
	logq    chan logItem
	// level is the logging level a host last asked for, given to a
	// standby server that loads later.
	levelMu sync.Mutex
	level   string

	// prompts maps the host's prompt names to their servers (prompts.go).
	// promptsEpoch counts the prompts/list_changed of servers whose
	// prompts route; promptsRead is the count the table was read at.
	promptsMu                 sync.Mutex
	prompts                   map[string]promptRoute
	promptsEpoch, promptsRead uint64
	// changes are the servers' list changes not yet passed on
	// (listchanged.go).
	changes listChanges
	// sweepStop ends the sweep for lapsed leases (lapsed.go); sweepDone
	// is closed when it has.
	sweepStop, sweepDone chan struct{}
	// integ is the checkpoint integrator beside the gate (nil: off).
	integ *checkpoint.Running
	// callers are the host sessions with a call in flight, per server, to
	// forward a server's requests to (asks.go).
	callers *asks.Callers
	// subs are the host sessions' resource subscriptions (subscribe.go).
	subs subscriptions
	// tasks are the task handles' collected results (tasks.go).
	tasks taskBook
	// beforeCollect, when set (by tests only), runs as a call that read
	// its row is about to attach to the row's run: the window in which
	// another process, or this proxy's sweep, may move the run on.
	beforeCollect func(runID string)
	logStop       chan struct{}
	logDone       chan struct{}
}

// ErrNoTools marks a proxy whose servers registered no tool at all.
var ErrNoTools = errors.New("proxy: no tool registered")

// New checks the proxy's files, opens the database and the index, checks
// the files again, loads every server's tools under its manifest and
// rules, and builds the gate and the MCP server. A server that fails to
// load is reported on Stderr and left out; if every server fails, New
// fails with ErrNoTools. Servers that load but offer no tool at all (the
// manifest pins none) are served with a warning on Stderr: the host sees
// an empty tool list beside the status tool, and their other surfaces.
func New(ctx context.Context, cfg *Config, opts Options) (p *Proxy, err error) {
	opts = opts.withDefaults()
	if err := config.CheckFiles(cfg, false); err != nil {
		return nil, err
	}
	manifests, err := readManifests(cfg)
	if err != nil {
		return nil, err
	}
	p = newProxy(cfg, opts)
	opened := p
	defer func() {
		if err != nil {
			opened.Close()
		}
	}()
	if p.store, err = sqlite.Open(cfg.Database); err != nil {
		return nil, err
	}
	if p.ix, err = index.Open(cfg.Index); err != nil {
		return nil, err
	}
	if err := config.CheckFiles(cfg, true); err != nil {
		return nil, err
	}
	if p.sealer, err = seal.LoadOrCreate(cfg.Index + SealKeySuffix); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if _, err := p.sweepErased(ctx); err != nil {
		return nil, fmt.Errorf("proxy: the index's rows of erased runs could not be cleared: %w", err)
	}
	gateTools, err := p.loadServers(ctx, manifests)
	if err != nil {
		return nil, err
	}
	if err := p.buildGate(ctx, gateTools); err != nil {
		return nil, err
	}
	p.server = p.newServer()
	p.sweepStop, p.sweepDone = make(chan struct{}), make(chan struct{})
	p.sweepLater(p.sweepLapsed(ctx, ""))
	return p, nil
}

// withDefaults fills in the zero fields.
func (opts Options) withDefaults() Options {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	return opts
}

// readManifests reads every server's pin, in configuration order.
func readManifests(cfg *Config) ([]*mcp.Manifest, error) {
	manifests := make([]*mcp.Manifest, len(cfg.Servers))
	for i, s := range cfg.Servers {
		var err error
		if manifests[i], err = mcp.ReadManifest(s.Manifest); err != nil {
			return nil, fmt.Errorf("proxy: server %q: %w (run `agentrt-proxy pin`)", s.Name, err)
		}
	}
	return manifests, nil
}

// newProxy is a proxy with its tables made, an upstream per configured
// server and its log drain running; nothing is opened or connected yet.
func newProxy(cfg *Config, opts Options) *Proxy {
	p := &Proxy{cfg: cfg, opts: opts, tools: map[string]*ptool{}, logq: make(chan logItem, logQueue),
		logStop: make(chan struct{}), logDone: make(chan struct{}),
		subs:    subscriptions{m: map[string]*subscription{}, sem: make(chan struct{}, 16)},
		changes: newListChanges()}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
		p.servers = append(p.servers, newUpstream(p, s))
	}
	p.callers = asks.NewCallers(names, maxAsksInFlight)
	go p.drainLogs()
	for _, st := range cfg.Suggested() {
		p.logf("%s", suggestionLine(cfg, st))
	}
	return p
}

// loadServers loads every server's tools and registers them, and returns
// what the gate runs: the tools, and the sampling and elicitation
// requests the configuration forwards.
func (p *Proxy) loadServers(ctx context.Context, manifests []*mcp.Manifest) ([]agentrt.Tool, error) {
	var gateTools []agentrt.Tool
	loaded := 0 // servers whose load succeeded, with tools or none
	for i, u := range p.servers {
		tools, rep, lerr := u.load(ctx, manifests[i])
		if lerr != nil {
			p.logf("agentrt-proxy: server %s registered nothing: %s", u.name, trace.Sanitize(lerr.Error()))
			continue
		}
		loaded++
		if len(tools) == 0 {
			p.logf("agentrt-proxy: server %s offers no tools; its prompts and resources are still served", u.name)
		}
		registered, err := p.register(u, rep, tools)
		if err != nil {
			return nil, err
		}
		gateTools = append(gateTools, registered...)
	}
	if loaded == 0 {
		return nil, noTools(p.cfg)
	}
	if len(p.tools) == 0 {
		p.logf("agentrt-proxy: no server offers a tool; the host sees only %s until one does (run `agentrt-proxy pin` when a server adds tools)", p.cfg.StatusTool)
	}
	for _, s := range p.cfg.Servers {
		for _, kind := range []ServerRequest{RequestSampling, RequestElicitation} {
			if s.Forward[kind] {
				gateTools = append(gateTools, askTool{p: p, server: s.Name, kind: kind})
			}
		}
	}
	if _, clash := p.tools[p.cfg.StatusTool]; clash {
		return nil, &agentrt.ConfigError{Field: "status_tool", Reason: fmt.Sprintf("%q is also the name of a proxied tool; choose another", p.cfg.StatusTool)}
	}
	sort.Slice(p.order, func(i, j int) bool { return p.order[i].name < p.order[j].name })
	return gateTools, nil
}

// load connects the server and loads its tools under manifest m and its
// rules, keeping its report. A server whose login does not work goes on
// standby: its tools are still offered, from the pin, and answer
// UNAVAILABLE until a new login; stderr says how.
func (u *upstream) load(ctx context.Context, m *mcp.Manifest) ([]agentrt.Tool, *mcp.Report, error) {
	p, s := u.p, u.cfg
	srv, lerr := s.Dial(DialOptions{Lookup: p.opts.Lookup, OnLoginNeeded: p.loginNeeded})
	var tools []agentrt.Tool
	var rep *mcp.Report
	if lerr == nil {
		u.login, _ = srv.OAuthHandler.(*credentials.Stored)
		srv.Notifications = p.notifications(s)
		tools, rep, lerr = mcp.Load(ctx, srv, m, s.MCPRules())
	}
	if lerr != nil && s.OAuth != nil && s.OAuth.Grant != GrantClientCredentials && loginLapsed(lerr) {
		if rep != nil && rep.Connection != nil {
			rep.Connection.Close()
		}
		told := u.login != nil // its handler said so as it failed
		u.login = nil
		tools, rep, lerr = u.offlineTools(m, told)
	}
	if rep != nil {
		p.reports = append(p.reports, rep)
		if rep.Connection != nil {
			u.opened = rep.Connection
			if lerr == nil {
				u.connected(rep.Connection)
			}
		}
	}
	return tools, rep, lerr
}

// register makes a proxied tool of each tool u loaded, under its rule.
func (p *Proxy) register(u *upstream, rep *mcp.Report, tools []agentrt.Tool) ([]agentrt.Tool, error) {
	s := u.cfg
	regs := map[string]mcp.Registration{}
	for _, g := range rep.Registered {
		regs[g.Name] = g
	}
	for _, tl := range tools {
		spec := tl.Spec()
		g := regs[spec.Name]
		rule := s.Rules[g.Tool]
		t := &ptool{name: spec.Name, server: s.Name, up: u, upstream: g.Tool, spec: spec, rule: rule,
			fixed: map[string]json.RawMessage{}, window: p.cfg.RepeatWindow}
		if rule.RepeatWindow != nil {
			t.window = *rule.RepeatWindow
		}
		for k, v := range rule.Fixed {
			c, err := agentrt.CanonicalJSON(v)
			if err != nil {
				return nil, fmt.Errorf("proxy: server %q: tool %q: fixed %q: %w", s.Name, g.Tool, k, err)
			}
			t.fixed[k] = c
		}
		if _, dup := p.tools[t.name]; dup {
			return nil, fmt.Errorf("proxy: two servers offer a tool named %q; rename one", t.name)
		}
		p.tools[t.name] = t
		p.order = append(p.order, t)
	}
	return tools, nil
}

// buildGate checks the prompts' names, builds the policy and the gate
// every call goes through.
func (p *Proxy) buildGate(ctx context.Context, gateTools []agentrt.Tool) error {
	cfg := p.cfg
	if err := p.checkPrompts(ctx); err != nil {
		return err
	}
	var err error
	if p.policy, err = newGatePolicy(cfg, p.tools); err != nil {
		return err
	}
	pinned := config.Pinned(cfg)
	if pinned == nil && cfg.PinnedKeys != "" {
		if pinned, err = agentrt.LoadPinnedKeys(cfg.PinnedKeys); err != nil {
			return fmt.Errorf("proxy: pinned_keys: %w", err)
		}
	}
	rules, err := config.DisclosureRules(cfg)
	if err != nil {
		return err
	}
	if p.integ, err = cfg.Checkpoint.Start(p.store, func(err error) {
		p.logf("agentrt-proxy: checkpoint: %s", trace.Sanitize(err.Error()))
	}); err != nil {
		return fmt.Errorf("proxy: checkpoint_key: %w", err)
	}
	p.gate, err = agentrt.NewGate(agentrt.GateConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:      gateStore(p.store),
			Policy:     p.policy,
			Tools:      gateTools,
			Observer:   p.opts.Observer,
			Reconcile:  p.reconcile,
			Now:        p.opts.Now,
			LeaseTTL:   cfg.LeaseTTL,
			LeaseOwner: "agentrt-proxy:" + cfg.Session,
			PinnedKeys: pinned,
			// Every run records the requirement in its limits too.
			RequireSignedGrant: cfg.RequireSignedGrant,
			// Secrets in results are redacted by default (docs/disclosure.md).
			Disclosure: rules,
			// Each commit waits for its checkpoint with checkpoint_sync.
			AwaitCheckpoint: p.integ.EngineAwait(),
		},
	})
	return err
}

// Reports are what Load said about each server, in configuration order.
func (p *Proxy) Reports() []*mcp.Report { return p.reports }

// Store is the runs database the proxy records into.
func (p *Proxy) Store() agentrt.Store { return p.store }

// Server is the MCP server the host talks to; Serve connects it.
func (p *Proxy) Server() *sdk.Server { return p.server }

// Serve answers the host over t until the host disconnects or ctx is
// cancelled, then waits for calls in flight to record their outcome.
func (p *Proxy) Serve(ctx context.Context, t sdk.Transport) error {
	ss, err := p.server.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		ss.Close()
		<-done
		err = nil
	}
	p.inflight.Wait()
	return err
}

// Close ends the upstream connections and closes the stores; calls in
// flight finish first.
func (p *Proxy) Close() error {
	if p.sweepStop != nil {
		close(p.sweepStop)
		<-p.sweepDone
		p.sweepStop = nil
	}
	p.inflight.Wait()
	p.integ.Stop()
	var errs []error
	for _, u := range p.servers {
		errs = append(errs, u.close())
	}
	if p.logStop != nil {
		close(p.logStop)
		<-p.logDone
		p.logStop = nil
	}
	if p.ix != nil {
		errs = append(errs, p.ix.Close())
	}
	if p.store != nil {
		errs = append(errs, p.store.Close())
	}
	return errors.Join(errs...)
}

// loginNeeded tells the operator, once per failure, that an OAuth
// server's tools answer UNAVAILABLE until a new login.
func (p *Proxy) loginNeeded(server string) {
	p.logf("agentrt-proxy: server %s needs a new login; its tools answer UNAVAILABLE until you run `agentrt-proxy login %s`", server, server)
}

func (p *Proxy) logf(format string, args ...any) {
	p.stderrMu.Lock()
	defer p.stderrMu.Unlock()
	fmt.Fprintf(p.opts.Stderr, format+"\n", args...)
}

func (p *Proxy) now() time.Time { return p.opts.Now().UTC() }

// newRunID is <session>.<16 hex>.
func (p *Proxy) newRunID() string {
	return p.cfg.Session + "." + token.Hex(8)
}

// limits are every proxied run's: one call, its approval and its closing.
func (p *Proxy) limits() agentrt.Limits {
	return agentrt.Limits{MaxSteps: 3, MaxConsecutiveToolFailures: 3, LoopThreshold: 3,
		ApprovalTTL: p.cfg.ApprovalTTL, GrantTTL: p.cfg.GrantTTL, RequireSignedGrant: p.cfg.RequireSignedGrant}
}

// newServer registers every proxied tool with its restricted schema, and
// the status tool, and forwards the surfaces beyond tools. Nothing here
// approves, elicits or samples.
func (p *Proxy) newServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: serverName, Version: Version}, p.serverOptions())
	p.forward(s)
	p.serveTasks(s)
	for _, t := range p.order {
		t := t
		tool := &sdk.Tool{Name: t.name, Description: t.spec.Description, InputSchema: json.RawMessage(t.spec.InputSchema)}
		if t.spec.SideEffect == agentrt.ReadOnly {
			tool.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true}
		}
		s.AddTool(tool, p.serveCall(t))
	}
	s.AddTool(&sdk.Tool{Name: p.cfg.StatusTool, Description: statusDescription, InputSchema: json.RawMessage(statusSchema),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return p.status(ctx, req.Params.Arguments).Result(), nil
		})
	return s
}

// Check loads every server as New would, without opening the database or
// the index, and closes the connections again: the load report an
// operator reads before starting a host. It fails with ErrNoTools when no
// server loads (a server offering no tool at all loads), and when the
// status tool's name clashes with a tool's.
func Check(ctx context.Context, cfg *Config) ([]*mcp.Report, error) {
	return CheckWith(ctx, cfg, nil)
}

// CheckWith is Check reading secrets through lookup (nil: the process's
// environment).
func CheckWith(ctx context.Context, cfg *Config, lookup func(string) (string, bool)) ([]*mcp.Report, error) {
	if err := config.CheckFiles(cfg, false); err != nil {
		return nil, err
	}
	var reps []*mcp.Report
	names := map[string]bool{}
	loaded := 0
	// The servers' surfaces, to find a prompt name two servers offer as
	// New would.
	probe := &Proxy{cfg: cfg, opts: Options{Stderr: io.Discard, Now: time.Now}}
	defer func() {
		for _, u := range probe.servers {
			u.close()
		}
	}()
	for _, s := range cfg.Servers {
		m, err := mcp.ReadManifest(s.Manifest)
		if err != nil {
			return reps, fmt.Errorf("proxy: server %q: %w (run `agentrt-proxy pin`)", s.Name, err)
		}
		srv, err := s.Dial(DialOptions{Lookup: lookup})
		if err != nil {
			return reps, err
		}
		_, rep, err := mcp.Load(ctx, srv, m, s.MCPRules())
		if rep == nil {
			return reps, err
		}
		reps = append(reps, rep)
		if rep.Connection != nil {
			u := newUpstream(probe, s)
			probe.servers = append(probe.servers, u)
			u.opened = rep.Connection
			if err == nil {
				u.connected(rep.Connection)
				loaded++
			}
		}
		for _, g := range rep.Registered {
			names[g.Name] = true
		}
	}
	if loaded == 0 {
		return reps, noTools(cfg)
	}
	if names[cfg.StatusTool] {
		return reps, &agentrt.ConfigError{Field: "status_tool", Reason: fmt.Sprintf("%q is also the name of a proxied tool; choose another", cfg.StatusTool)}
	}
	if err := probe.checkPrompts(ctx); err != nil {
		return reps, err
	}
	return reps, nil
}
