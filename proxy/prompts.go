package proxy

import (
	"context"
	"errors"
	"fmt"
	"sort"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/proxy/internal/mcp2026"
	"github.com/agentrt/agentrt/proxy/internal/reply"
	"github.com/agentrt/agentrt/trace"
)

// Prompts keep the servers' own names: a host asks for a prompt by the
// name its server gave it. A name two servers offer is refused at start,
// naming both, unless the configuration renames one (prompt_rename).

// promptRoute is where a host's prompt name goes: the server and the
// server's own name for it.
type promptRoute struct {
	u    *upstream
	name string
}

// PromptCollisionError refuses a configuration under which two servers
// offer a prompt of the same name.
type PromptCollisionError struct {
	Name           string
	First, Second  string // the servers
	FirstUpstream  string // each server's own name for it
	SecondUpstream string
}

func (e *PromptCollisionError) Error() string {
	return fmt.Sprintf("proxy: servers %q and %q both offer a prompt named %q; rename one with prompt_rename in its server's entry",
		e.First, e.Second, trace.Sanitize(e.Name))
}

// hostPromptName is the name the host sees for server u's prompt name.
func (u *upstream) hostPromptName(name string) string {
	if to, ok := u.promptRename[name]; ok {
		return to
	}
	return name
}

// promptTable lists the prompts of every server that forwards prompts or
// their completion, and maps the host's names to them. A name two servers
// offer is a *PromptCollisionError, unless keep (the table in use) gives
// it an owner: then the owner keeps it and the other is left out and
// reported. The listing holds what servers forwarding prompts offer, in
// the host's order.
func (p *Proxy) promptTable(ctx context.Context, keep map[string]promptRoute) (map[string]promptRoute, []*sdk.Prompt, error) {
	type entry struct {
		route promptRoute
		pr    *sdk.Prompt
	}
	byName := map[string]entry{}
	contested := map[string]bool{}
	for _, u := range p.upstreams() {
		if !u.allowed[SurfacePrompts] && !u.allowed[SurfaceCompletion] {
			continue
		}
		err := listPages(ctx, u, u.conn.ListPrompts, func(r *sdk.ListPromptsResult) string { return r.NextCursor }, func(res *sdk.ListPromptsResult) error {
			for _, pr := range res.Prompts {
				if pr == nil || !config.ValidName(pr.Name) || len(byName) == maxForwardItems {
					continue
				}
				host := u.hostPromptName(pr.Name)
				if prev, dup := byName[host]; dup && prev.route.u != u {
					pc := &PromptCollisionError{Name: host, First: prev.route.u.name, Second: u.name, FirstUpstream: prev.route.name, SecondUpstream: pr.Name}
					if keep == nil {
						return pc
					}
					owner, kept := keep[host]
					if !kept {
						// Both offer it only since start: neither gets it.
						p.logf("agentrt-proxy: %s; neither is offered", pc.Error())
						contested[host] = true
						continue
					}
					p.logf("agentrt-proxy: %s; it stays %s's", pc.Error(), owner.u.name)
					if owner.u != u {
						continue
					}
				}
				byName[host] = entry{promptRoute{u: u, name: pr.Name}, pr}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	table := map[string]promptRoute{}
	var out []*sdk.Prompt
	for host, e := range byName {
		if contested[host] {
			continue
		}
		table[host] = e.route
		if !e.route.u.allowed[SurfacePrompts] {
			continue
		}
		np := &sdk.Prompt{Name: host, Title: reply.Quote(e.pr.Title, reply.BoundName), Description: reply.Quote(e.pr.Description, reply.BoundReason)}
		for _, a := range e.pr.Arguments {
			if a == nil {
				continue
			}
			np.Arguments = append(np.Arguments, &sdk.PromptArgument{Name: reply.Quote(a.Name, reply.BoundName), Title: reply.Quote(a.Title, reply.BoundName),
				Description: reply.Quote(a.Description, reply.BoundReason), Required: a.Required})
		}
		out = append(out, np)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return table, out, nil
}

// checkPrompts reads the prompt table at start: a name two servers offer
// refuses the configuration.
func (p *Proxy) checkPrompts(ctx context.Context) error {
	if !p.anyAllows(SurfacePrompts) && !p.anyAllows(SurfaceCompletion) {
		return nil
	}
	_, epoch := p.promptsNow()
	table, _, err := p.promptTable(ctx, nil)
	if pc := (*PromptCollisionError)(nil); errors.As(err, &pc) {
		return err
	}
	if err != nil {
		// A server that will not list its prompts now is reported, and
		// asked again when the host lists.
		p.logf("agentrt-proxy: the prompts could not be listed at start: %s", trace.Sanitize(err.Error()))
		return nil
	}
	p.setPrompts(table, epoch)
	return nil
}

// promptsNow is the prompt table in use, and the count of prompt list
// changes heard so far.
func (p *Proxy) promptsNow() (map[string]promptRoute, uint64) {
	p.promptsMu.Lock()
	defer p.promptsMu.Unlock()
	return p.prompts, p.promptsEpoch
}

// setPrompts keeps a table read after epoch changes had been heard; if
// more came in while it was read, the next route reads it again.
func (p *Proxy) setPrompts(t map[string]promptRoute, epoch uint64) {
	p.promptsMu.Lock()
	p.prompts, p.promptsRead = t, epoch
	p.promptsMu.Unlock()
}

// listPrompts lists every server's prompts under the host's names.
func (p *Proxy) listPrompts(ctx context.Context) (*sdk.ListPromptsResult, error) {
	keep, epoch := p.promptsNow()
	if keep == nil {
		keep = map[string]promptRoute{}
	}
	table, list, err := p.promptTable(ctx, keep)
	if err != nil {
		return nil, err
	}
	p.setPrompts(table, epoch)
	if list == nil {
		list = []*sdk.Prompt{}
	}
	return &sdk.ListPromptsResult{Prompts: list, Cacheable: mcp2026.Private}, nil
}

// routePrompt finds the server of a host's prompt name and the server's
// own name for it, listing again first when a server said its prompts
// changed since the table was read, and once when the name is not known
// yet. A listing that fails leaves the table as it was.
func (p *Proxy) routePrompt(ctx context.Context, name string, s Surface) (*upstream, string) {
	p.promptsMu.Lock()
	stale := p.promptsEpoch != p.promptsRead
	p.promptsMu.Unlock()
	relisted := stale && p.relistPrompts(ctx)
	for try := 0; try < 2; try++ {
		p.promptsMu.Lock()
		r, ok := p.prompts[name]
		p.promptsMu.Unlock()
		if ok && r.u.allowed[s] {
			return r.u, r.name
		}
		if ok || try == 1 || relisted || !p.relistPrompts(ctx) {
			break
		}
	}
	return nil, ""
}

// relistPrompts reads the prompt table again and says whether it could.
func (p *Proxy) relistPrompts(ctx context.Context) bool {
	_, err := p.listPrompts(ctx)
	return err == nil
}
