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
// Sources are kept in the order their window began, in two lists: those
// under the limit and those that have reached it. A source whose window
// has passed is dropped. When full, the oldest source under the limit is
// forgotten first, so a flood of new sources (each under it) forgets its
// own before a source held at its limit; only when every kept source is
// at the limit is the oldest of those forgotten. Each step is O(1)
// amortised. The caller holds h.mu.
type limiter struct {
	max         int
	bySrc       map[string]*list.Element
	under, over *list.List // of *rateState, oldest window at the front
}

type rateState struct {
	src    string
	window time.Time
	n      int
	in     *list.List
}

func (l *limiter) init(max int) {
	l.max, l.bySrc, l.under, l.over = max, map[string]*list.Element{}, list.New(), list.New()
}

func (l *limiter) drop(e *list.Element) {
	st := e.Value.(*rateState)
	delete(l.bySrc, st.src)
	st.in.Remove(e)
}

// count counts one request from src at now against limit and returns how
// many it has made in its window.
func (l *limiter) count(src string, now time.Time, limit int) int {
	for _, q := range []*list.List{l.under, l.over} {
		for e := q.Front(); e != nil && now.Sub(e.Value.(*rateState).window) >= time.Minute; e = q.Front() {
			l.drop(e)
		}
	}
	e := l.bySrc[src]
	if e == nil {
		for len(l.bySrc) >= l.max {
			if f := l.under.Front(); f != nil {
				l.drop(f)
			} else {
				l.drop(l.over.Front())
			}
		}
		e = l.under.PushBack(&rateState{src: src, window: now, in: l.under})
		l.bySrc[src] = e
	}
	st := e.Value.(*rateState)
	st.n++
	if st.n >= limit && st.in == l.under {
		// Keep window order in the list it moves to: insert before the
		// first source whose window began later.
		l.under.Remove(e)
		at := l.over.Back()
		for at != nil && at.Value.(*rateState).window.After(st.window) {
			at = at.Prev()
		}
		st.in = l.over
		if at == nil {
			e = l.over.PushFront(st)
		} else {
			e = l.over.InsertAfter(st, at)
		}
		l.bySrc[src] = e
	}
	return st.n
}
