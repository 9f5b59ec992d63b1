package console

import (
	"fmt"
	"log"
	"net/url"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Config configures a Handler. Store and Origin are required.
type Config struct {
	// Store is the runs database the console reads and decides on.
	Store agentrt.Store
	// Origin is the console's origin as browsers name it, such as
	// http://localhost:7380: a passkey is scoped to its host (the relying
	// party id, which must be a host name, not an address), every
	// state-changing request must come from it, and an https origin makes
	// the session cookie Secure.
	Origin string
	// Observer hears the events the console's decisions commit; nil
	// hears nothing.
	Observer agentrt.Observer
	// Now is the clock decisions and sessions use; nil is the wall clock.
	Now func() time.Time
	// IdleTimeout ends a session unused this long; zero means 15 minutes.
	// An open live page does not count as use.
	IdleTimeout time.Duration
	// SessionLifetime ends a session this long after sign-in however busy
	// it is; zero means 12 hours.
	SessionLifetime time.Duration
	// PageSize is how many rows a page lists; zero means 50.
	PageSize int
	// PollInterval is how often live updates look for new events; zero
	// means 500ms.
	PollInterval time.Duration
	// AuthRate is how many sign-in and enrollment requests one client
	// source (an IPv4 address, an IPv6 /64) may make per minute; zero
	// means 20.
	AuthRate int
	// StreamsPerSession is how many live-update streams one session may
	// hold open; zero means 4. MaxStreams bounds them over all sessions;
	// zero means 256.
	StreamsPerSession, MaxStreams int
	// ErrorLog hears what a refusal does not tell the client (a passkey
	// library's reason, a store error), quoted; nil is log.Default().
	ErrorLog *log.Logger
}

// DefaultConfig returns a Config on store and origin with every other field
// at its default.
func DefaultConfig(store agentrt.Store, origin string) Config {
	return Config{Store: store, Origin: origin, IdleTimeout: 15 * time.Minute, SessionLifetime: 12 * time.Hour, PageSize: 50,
		PollInterval: 500 * time.Millisecond, AuthRate: 20, StreamsPerSession: 4, MaxStreams: 256}
}

func (c *Config) validate() (*url.URL, error) {
	bad := func(field, reason string) error {
		return &agentrt.ConfigError{Field: "console.Config." + field, Reason: reason}
	}
	if c.Store == nil {
		return nil, bad("Store", "is required")
	}
	u, err := url.Parse(c.Origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, bad("Origin", fmt.Sprintf("must be a URL such as http://localhost:7380 with no path, got %q", c.Origin))
	}
	if ip := u.Hostname(); isIP(ip) {
		return nil, bad("Origin", "must name a host, not an address: a passkey's relying party is a host name (use localhost)")
	}
	if u.Scheme == "http" && u.Hostname() != "localhost" {
		return nil, bad("Origin", "must be https unless its host is localhost: browsers allow passkeys only in a secure context")
	}
	c.Origin = u.Scheme + "://" + u.Host
	if c.IdleTimeout < 0 || c.SessionLifetime < 0 || c.PageSize < 0 || c.PollInterval < 0 || c.AuthRate < 0 || c.StreamsPerSession < 0 || c.MaxStreams < 0 {
		return nil, bad("IdleTimeout", "no duration or count may be negative")
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 15 * time.Minute
	}
	if c.SessionLifetime == 0 {
		c.SessionLifetime = 12 * time.Hour
	}
	if c.SessionLifetime < c.IdleTimeout {
		return nil, bad("SessionLifetime", fmt.Sprintf("must be at least IdleTimeout (%s), got %s", c.IdleTimeout, c.SessionLifetime))
	}
	if c.StreamsPerSession == 0 {
		c.StreamsPerSession = 4
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = 256
	}
	if c.PageSize == 0 {
		c.PageSize = 50
	}
	if c.PageSize > 1000 {
		return nil, bad("PageSize", fmt.Sprintf("must be at most 1000, got %d", c.PageSize))
	}
	if c.PollInterval == 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.AuthRate == 0 {
		c.AuthRate = 20
	}
	return u, nil
}
