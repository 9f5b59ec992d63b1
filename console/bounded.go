package console

import (
	"container/list"
	"time"
)

// Bounds on what the console keeps in memory for clients that are not
// signed in.
const (
	// maxCeremonies is how many begun ceremonies are kept; past it the
	// oldest is dropped (its finish then fails and the page starts again).
	maxCeremonies = 10000
	// maxLimited is how many client sources the sign-in limiter counts;
	// past it the one whose window began first is forgotten.
	maxLimited = 10000
)

// ceremonies holds begun ceremonies by id, in the order begun. Every one
// has the same lifetime, so that order is also the order they expire in:
// putting one drops the expired ones from the front and, when full, the
// oldest; finding one is a map lookup. Each is O(1) amortised. The
// caller holds h.mu.
type ceremonies struct {
	max   int
	byID  map[string]*list.Element
	order *list.List // of *ceremony, oldest at the front
}

func (c *ceremonies) init(max int) {
	c.max, c.byID, c.order = max, map[string]*list.Element{}, list.New()
}

func (c *ceremonies) put(id string, cer *ceremony, now time.Time) {
	for e := c.order.Front(); e != nil && !now.Before(e.Value.(*ceremony).expires); e = c.order.Front() {
		c.remove(e)
	}
	for c.order.Len() >= c.max {
		c.remove(c.order.Front())
	}
	cer.id = id
	c.byID[id] = c.order.PushBack(cer)
}

// take removes and returns the ceremony id names, nil when there is none.
func (c *ceremonies) take(id string) *ceremony {
	e := c.byID[id]
	if e == nil {
		return nil
	}
	c.remove(e)
	return e.Value.(*ceremony)
}

func (c *ceremonies) remove(e *list.Element) {
	delete(c.byID, e.Value.(*ceremony).id)
	c.order.Remove(e)
}

func (c *ceremonies) len() int { return c.order.Len() }

// limiter counts requests per client source in fixed one-minute windows.
// Sources are kept in the order their window began; a source whose window
// has passed starts a new one at the back. When full, the source at the
// front (the window that began first) is forgotten, so a flood of new
// sources evicts only sources older than any it has, never one counted
// within the minute unless every kept one is. The caller holds h.mu.
type limiter struct {
	max   int
	bySrc map[string]*list.Element
	order *list.List // of *rateState, oldest window at the front
}

type rateState struct {
	src    string
	window time.Time
	n      int
}

func (l *limiter) init(max int) {
	l.max, l.bySrc, l.order = max, map[string]*list.Element{}, list.New()
}

// count counts one request from src at now and returns how many it has
// made in its window.
func (l *limiter) count(src string, now time.Time) int {
	for e := l.order.Front(); e != nil && now.Sub(e.Value.(*rateState).window) >= time.Minute; e = l.order.Front() {
		delete(l.bySrc, e.Value.(*rateState).src)
		l.order.Remove(e)
	}
	e := l.bySrc[src]
	if e == nil {
		for l.order.Len() >= l.max {
			f := l.order.Front()
			delete(l.bySrc, f.Value.(*rateState).src)
			l.order.Remove(f)
		}
		e = l.order.PushBack(&rateState{src: src, window: now})
		l.bySrc[src] = e
	}
	st := e.Value.(*rateState)
	st.n++
	return st.n
}
