package config

import (
	"maps"
	"net/http"
	"os"
	"slices"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
)

// Resolved is a server's secrets as read when the proxy starts: the
// header values and the stdio variables. It is never printed.
type Resolved struct {
	Headers http.Header
	Env     []string
}

// ResolveSecrets reads every secret a server's entry references.
func ResolveSecrets(s ServerConfig, lookup func(string) (string, bool)) (Resolved, error) {
	var out Resolved
	if len(s.Headers) > 0 {
		out.Headers = http.Header{}
		for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
			v, err := credentials.Secret(s.Headers[name], s.Name, "headers."+name, lookup)
			if err != nil {
				return out, err
			}
			out.Headers.Set(name, v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.SecretEnv)) {
		v, err := credentials.Secret(s.SecretEnv[name], s.Name, "secret_env."+name, lookup)
		if err != nil {
			return out, err
		}
		out.Env = append(out.Env, name+"="+v)
	}
	return out, nil
}

// DialOptions are what connecting a configured server needs beyond its
// entry.
type DialOptions struct {
	// Lookup reads the proxy's environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// OnLoginNeeded, when set, hears that an OAuth server's login no
	// longer works (revoked, expired without refresh).
	OnLoginNeeded func(server string)
}

// Dial is the mcp.Server for this entry with its secrets read: headers
// on every request to the endpoint's origin, secret variables for a stdio
// server, and for an OAuth server the tokens `agentrt-proxy login` stored
// (or client credentials). An error names the secret that is missing,
// never a value.
func (s ServerConfig) Dial(opts DialOptions) (mcp.Server, error) {
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	srv := s.Server()
	sec, err := ResolveSecrets(s, opts.Lookup)
	if err != nil {
		return srv, err
	}
	srv.Env = append(srv.Env, sec.Env...)
	srv.HTTPClient = credentials.HeaderClient(s.Endpoint, sec.Headers)
	if s.OAuth != nil {
		h, err := credentials.Handler(s.Name, s.Endpoint, s.OAuth, opts.Lookup, opts.OnLoginNeeded)
		if err != nil {
			return srv, err
		}
		srv.OAuthHandler = h
	}
	return srv, nil
}
