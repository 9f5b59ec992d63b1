package webhook

import (
	"container/list"
	"time"
)

// The allowances for requests that fail authentication: per source (an
// IPv4 address, an IPv6 /64) and over all sources. They are apart from
// Config.Rate, which only authenticated requests spend.
const (
	FailedRatePerSource  = 5.0
	FailedBurstPerSource = 20
	FailedRate           = 50.0
	FailedBurst          = 100
	// maxFailedSources is how many sources are counted; past it the
	// least recently refused is forgotten.
	maxFailedSources = 4096
)

// failedLimiter charges a refusal for failed authentication against its
// source's bucket and the total one.
type failedLimiter struct {
	total bucket
	src   map[string]*list.Element
	order *list.List // of *srcBucket, least recently refused at the front
}

type srcBucket struct {
	key string
	b   bucket
}

func (l *failedLimiter) init() {
	l.total = bucket{rate: FailedRate, burst: FailedBurst, tokens: FailedBurst}
	l.src, l.order = map[string]*list.Element{}, list.New()
}

// take charges one refusal from src at now; false when src or the total
// is past its allowance.
func (l *failedLimiter) take(src string, now time.Time) bool {
	l.total.mu.Lock()
	e := l.src[src]
	if e == nil {
		for l.order.Len() >= maxFailedSources {
			f := l.order.Front()
			delete(l.src, f.Value.(*srcBucket).key)
			l.order.Remove(f)
		}
		e = l.order.PushBack(&srcBucket{key: src, b: bucket{rate: FailedRatePerSource, burst: FailedBurstPerSource, tokens: FailedBurstPerSource}})
		l.src[src] = e
	} else {
		l.order.MoveToBack(e)
	}
	sb := e.Value.(*srcBucket)
	l.total.mu.Unlock()
	// The source's bucket first: a source past its own allowance does not
	// spend the total one.
	return sb.b.take(now) && l.total.take(now)
}
