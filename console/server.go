package console

import (
	"net"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/internal/httpguard"
)

// The connection caps agentrt-console serves with: at most
// MaxConnections open at once, MaxConnectionsPerSource of them from one
// client source (an IPv4 address, an IPv6 /64). A connection past either
// is closed as soon as it is accepted.
const (
	MaxConnections          = 512
	MaxConnectionsPerSource = 64
)

// NewServer is the http.Server agentrt-console runs h with: headers within
// 5 seconds, a whole request within 30, 30 seconds idle between requests,
// 64 KiB of headers. A live-update stream lifts its own read deadline.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: httpguard.HeaderTimeout, ReadTimeout: 30 * time.Second,
		IdleTimeout: httpguard.IdleTimeout, MaxHeaderBytes: 64 << 10}
}

// LimitListener caps ln's connections at MaxConnections and
// MaxConnectionsPerSource.
func LimitListener(ln net.Listener) net.Listener {
	return httpguard.Limit(ln, httpguard.Limits{Max: MaxConnections, PerSource: MaxConnectionsPerSource})
}
