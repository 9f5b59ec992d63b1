package proxy

import "sync"

// A server's notifications/prompts/list_changed and
// notifications/resources/list_changed are passed on to every host
// session when the configuration forwards that surface of the server:
// the proxy first forgets what it read of that server's list (its
// resources and templates, which a read then lists again to route by;
// the prompt table, which a get or a completion then reads again), then
// tells the hosts as surfacesAppeared does. One from a server that does
// not forward the surface is dropped. A tools/list_changed is not passed
// on: tools are pinned, and a changed tool is refused until it is pinned
// again (mcp's watcher).
//
// The hooks run on the connection's reader, so they only mark the change
// and wake the drain (forward.go's drainLogs); marks of one server and
// list coalesce, so a flood holds at most one mark per server and list.

// listChange is one server's list that changed: SurfacePrompts or
// SurfaceResources.
type listChange struct {
	server  string
	surface Surface
}

// listChanges are the changes heard and not yet passed on.
type listChanges struct {
	mu   sync.Mutex
	m    map[listChange]bool
	kick chan struct{} // one wake-up waiting at most
}

func newListChanges() listChanges {
	return listChanges{m: map[listChange]bool{}, kick: make(chan struct{}, 1)}
}

// heard marks a change and wakes the drain; it never blocks.
func (lc *listChanges) heard(server string, s Surface) {
	lc.mu.Lock()
	lc.m[listChange{server, s}] = true
	lc.mu.Unlock()
	select {
	case lc.kick <- struct{}{}:
	default:
	}
}

func (lc *listChanges) take() map[listChange]bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	m := lc.m
	lc.m = map[listChange]bool{}
	return m
}

// passListChanges forgets what the changed lists held and tells the
// hosts, once for all the changes heard since the last time.
func (p *Proxy) passListChanges() {
	var prompts, resources bool
	for ch := range p.changes.take() {
		u := p.upstreamNamed(ch.server)
		if u == nil {
			// Not loaded yet: nothing of it was read, and a server that
			// loads later is announced as it loads.
			continue
		}
		switch ch.surface {
		case SurfacePrompts:
			if u.allowed[SurfacePrompts] || u.allowed[SurfaceCompletion] {
				p.promptsMu.Lock()
				p.promptsEpoch++
				p.promptsMu.Unlock()
			}
			prompts = prompts || u.allowed[SurfacePrompts]
		case SurfaceResources:
			if !u.allowed[SurfaceResources] {
				continue
			}
			u.mu.Lock()
			u.resEpoch++
			u.listed, u.listedRes, u.listedTmpl = false, false, false
			u.mu.Unlock()
			resources = true
		}
	}
	p.listsChanged(prompts, resources)
}

// upstreamNamed is the connected server of that name, or nil.
func (p *Proxy) upstreamNamed(name string) *upstream {
	for _, u := range p.upstreams() {
		if u.name == name {
			return u
		}
	}
	return nil
}

// anyAnnounces says whether some server forwarding surface s says, in
// its capabilities, that it sends list_changed for it.
func (p *Proxy) anyAnnounces(s Surface) bool {
	for _, u := range p.upstreams() {
		if u.allowed[s] && u.announces[s] {
			return true
		}
	}
	return false
}
