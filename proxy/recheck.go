package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/proxy/internal/index"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/sqlite"
)

// DefaultRecheckLimit is how many of a session's newest calls Recheck reads
// when RecheckOptions.Limit is zero.
const DefaultRecheckLimit = 50

// RecheckOptions choose the calls to re-check. RunID and Session are
// exclusive; with neither, the configuration's session.
type RecheckOptions struct {
	RunID   string
	Session string
	// Limit bounds how many calls of a session are read; zero means
	// DefaultRecheckLimit.
	Limit int
	// CurrentTools connects to the servers and hands their current tools
	// to the re-check, for a step whose spec was not stored. Off, nothing
	// is connected to.
	CurrentTools bool
}

// RecheckSummary is what Recheck found.
type RecheckSummary struct {
	// PolicyID names the policy of today, from the configuration.
	PolicyID string
	Reports  []agentrt.RecheckReport
	// Checked counts decisions re-checked; Skipped those not re-checkable;
	// Differ the runs with at least one decision decided differently.
	Checked, Skipped, Differ int
}

// Recheck asks today's policy, built from cfg, about every recorded policy
// decision of the chosen calls, opening the database and the index
// read-only. An approval about an unknown outcome is the runtime's and the
// proxy's own question, not the policy's, and is recognised as such.
func Recheck(ctx context.Context, cfg *Config, opts RecheckOptions) (*RecheckSummary, error) {
	if opts.RunID != "" && opts.Session != "" {
		return nil, &agentrt.ConfigError{Field: "RecheckOptions", Reason: "RunID and Session are exclusive"}
	}
	if opts.Limit < 0 {
		return nil, &agentrt.ConfigError{Field: "RecheckOptions.Limit", Reason: "must not be negative"}
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultRecheckLimit
	}
	if err := config.CheckFiles(cfg, true); err != nil {
		return nil, err
	}
	tools, err := recheckTools(cfg)
	if err != nil {
		return nil, err
	}
	pol, err := newGatePolicy(cfg, tools)
	if err != nil {
		return nil, err
	}
	var current []agentrt.Tool
	if opts.CurrentTools {
		var conns []*mcp.Connection
		current, conns, err = loadCurrent(ctx, cfg)
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	st, err := sqlite.OpenExisting(cfg.Database, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	runs := []string{opts.RunID}
	if opts.RunID == "" {
		session := opts.Session
		if session == "" {
			session = cfg.Session
		}
		if runs, err = index.ReadSessionRuns(ctx, cfg.Index, session, opts.Limit); err != nil {
			return nil, err
		}
	}
	// The configuration's disclosure rules find the secrets in each call's
	// arguments that the gate handed the policy (request.secrets, and the
	// class map's approvals, which name them).
	rules, err := config.DisclosureRules(cfg)
	if err != nil {
		return nil, err
	}
	sum := &RecheckSummary{PolicyID: pol.PolicyID()}
	for _, id := range runs {
		rep, err := agentrt.Recheck(ctx, st, id, pol, agentrt.RecheckOptions{Tools: current, Disclosure: rules})
		if err != nil {
			return nil, fmt.Errorf("proxy: re-checking run %s: %w", id, err)
		}
		sum.Reports = append(sum.Reports, rep)
		for _, ev := range rep.Evaluations {
			if ev.Result == agentrt.RecheckNotRecheckable {
				sum.Skipped++
			} else {
				sum.Checked++
			}
		}
		if len(rep.Differences()) > 0 {
			sum.Differ++
		}
	}
	return sum, nil
}

// recheckTools are the proxied tools as cfg makes them, by the name the
// model sees, without loading any server: what the policy is built over.
func recheckTools(cfg *Config) (map[string]*ptool, error) {
	tools := map[string]*ptool{}
	for _, s := range cfg.Servers {
		for name, r := range s.Rules {
			if r.Suggestion != "" {
				continue // not offered: no call to it is re-checked under it
			}
			model := r.Rename
			if model == "" {
				model = s.Name + "_" + name
			}
			t := &ptool{name: model, server: s.Name, upstream: name, rule: r, fixed: map[string]json.RawMessage{},
				spec: agentrt.ToolSpec{Name: model, SideEffect: r.SideEffect}}
			for k, v := range r.Fixed {
				c, err := agentrt.CanonicalJSON(v)
				if err != nil {
					return nil, err
				}
				t.fixed[k] = c
			}
			tools[model] = t
		}
	}
	return tools, nil
}

// loadCurrent loads every server's tools as they are now, and returns the
// connections it opened, for the caller to close when done.
func loadCurrent(ctx context.Context, cfg *Config) ([]agentrt.Tool, []*mcp.Connection, error) {
	var current []agentrt.Tool
	var conns []*mcp.Connection
	for _, s := range cfg.Servers {
		m, err := mcp.ReadManifest(s.Manifest)
		if err != nil {
			return nil, conns, err
		}
		srv, err := s.Dial(DialOptions{})
		if err != nil {
			return nil, conns, err
		}
		ts, rep, err := mcp.Load(ctx, srv, m, s.MCPRules())
		if err != nil {
			return nil, conns, err
		}
		conns = append(conns, rep.Connection)
		current = append(current, ts...)
	}
	return current, conns, nil
}
