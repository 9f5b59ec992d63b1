package httpguard

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Timeouts the three servers share: a client gets HeaderTimeout to send
// its request's headers and IdleTimeout between requests on one
// connection.
const (
	HeaderTimeout = 5 * time.Second
	IdleTimeout   = 30 * time.Second
)

// SourceKey is what a client is counted by: its IPv4 address, or the /64
// its IPv6 address is in (one host is routinely given a whole /64). An
// IPv4-mapped IPv6 address counts as the IPv4 address. A RemoteAddr that
// does not parse counts as itself.
func SourceKey(remoteAddr string) string {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// Refusing marks a response as the last on its connection. Go's server
// otherwise reads what is left of the request's body (up to 256 KiB)
// before it sends the response, so a refused client that sends its body
// slowly would hold the connection for the whole read timeout; with
// Connection: close the answer goes out at once and the connection ends.
// Call it before writing the status.
func Refusing(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// Limits bounds the connections a Listener keeps open.
type Limits struct {
	// Max is how many connections may be open at once; PerSource how many
	// of them one SourceKey may hold.
	Max, PerSource int
}

// Listener is a net.Listener that closes, as soon as it is accepted, a
// connection past its Limits: the server never sees it, and a client
// holding many slow connections cannot take every one.
type Listener struct {
	net.Listener
	lim Limits

	mu      sync.Mutex
	open    int
	bySrc   map[string]int
	refused int
}

// Limit wraps ln. A Limits field of zero or less leaves that bound off.
func Limit(ln net.Listener, lim Limits) *Listener {
	return &Listener{Listener: ln, lim: lim, bySrc: map[string]int{}}
}

// Accept returns the next connection within the limits; one past them is
// closed at once and not returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := SourceKey(c.RemoteAddr().String())
		l.mu.Lock()
		if (l.lim.Max > 0 && l.open >= l.lim.Max) || (l.lim.PerSource > 0 && l.bySrc[src] >= l.lim.PerSource) {
			l.refused++
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open++
		l.bySrc[src]++
		l.mu.Unlock()
		return &conn{Conn: c, l: l, src: src}, nil
	}
}

// Open is how many accepted connections are open; Refused how many were
// closed for being past a limit.
func (l *Listener) Open() (open, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.refused
}

type conn struct {
	net.Conn
	l    *Listener
	src  string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.l.bySrc[c.src]--; c.l.bySrc[c.src] <= 0 {
			delete(c.l.bySrc, c.src)
		}
		c.l.mu.Unlock()
	})
	return err
}

// Kept reports, for each of conns, whether it is still open 300ms on:
// the read times out rather than ending. Each is read at once, in
// parallel, so a closed one is seen however many are open. For tests of
// the caps (here, not in a _test file, so the three servers' tests share
// it).
func Kept(conns []net.Conn) (kept, closed int) {
	res := make(chan bool, len(conns))
	for _, c := range conns {
		go func() {
			c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			ne, ok := err.(net.Error)
			res <- ok && ne.Timeout()
		}()
	}
	for range conns {
		if <-res {
			kept++
		} else {
			closed++
		}
	}
	return kept, closed
}
