package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	"github.com/agentrt/agentrt/trace"
)

// The configuration's credential types and errors; package credentials
// (proxy/internal/credentials) reads, sends and keeps the credentials.
type (
	// OAuthConfig is a server's OAuth 2.1 entry.
	OAuthConfig = credentials.OAuthConfig
	// KeyAlg is the JWS algorithm a client assertion is signed with.
	KeyAlg = credentials.KeyAlg
	// LoginNeededError names an OAuth server whose login is missing or no
	// longer accepted, and why.
	LoginNeededError = credentials.LoginNeededError
	// SecretError names the server, the field and where a secret that
	// could not be read should have been; never its value.
	SecretError = credentials.SecretError
	// IssuerMismatchError is an authorization server, named by a server's
	// metadata, that is not the issuer its client is registered with.
	IssuerMismatchError = credentials.IssuerMismatchError
	// LoginOptions configure Login.
	LoginOptions = credentials.LoginOptions
)

const (
	// GrantAuthorizationCode: a person logs in once with `agentrt-proxy
	// login`; the proxy refreshes the tokens it stored.
	GrantAuthorizationCode = credentials.GrantAuthorizationCode
	// GrantClientCredentials: machine to machine, a pre-registered client
	// ID with a secret or a private key; no login.
	GrantClientCredentials = credentials.GrantClientCredentials
	// ES256 is ECDSA on P-256 with SHA-256.
	ES256 = credentials.ES256
	// RS256 is RSASSA-PKCS1-v1_5 with SHA-256.
	RS256 = credentials.RS256
)

var (
	// ErrLoginNeeded marks an OAuth server whose stored login is missing
	// or no longer accepted: an operator runs `agentrt-proxy login SERVER`.
	ErrLoginNeeded = credentials.ErrLoginNeeded
	// ErrSecret marks a secret the proxy could not read.
	ErrSecret = credentials.ErrSecret
)

// HeaderClient is the client a remote server is reached with: a fresh
// one whose transport adds headers to every request for endpoint's origin
// (and to no other), or nil when there are none.
func HeaderClient(endpoint string, headers http.Header) *http.Client {
	return credentials.HeaderClient(endpoint, headers)
}

// Login runs the OAuth authorization-code flow for one server with the
// go-sdk's AuthorizationCodeHandler and stores the tokens in the server's
// owner-only token file. The redirect is received on a loopback listener
// that exists only while Login runs. It returns the token file's path.
func Login(ctx context.Context, cfg *Config, server string, opts LoginOptions) (string, error) {
	var s *ServerConfig
	for i := range cfg.Servers {
		if cfg.Servers[i].Name == server {
			s = &cfg.Servers[i]
		}
	}
	if s == nil {
		return "", fmt.Errorf("proxy: no server named %q in %s", trace.Sanitize(server), cfg.Path)
	}
	return LoginServer(ctx, *s, opts)
}

// LoginServer is Login for one server entry, which need not be in a
// configuration file yet (init logs in before it writes one).
func LoginServer(ctx context.Context, s ServerConfig, opts LoginOptions) (string, error) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	o := s.OAuth
	if o == nil {
		return "", fmt.Errorf("proxy: server %q has no oauth entry; nothing to log in to", s.Name)
	}
	if o.Grant == GrantClientCredentials {
		return "", fmt.Errorf("proxy: server %q uses client credentials; the proxy obtains its tokens itself, no login is needed", s.Name)
	}
	if err := files.CheckPrivate(o.Tokens, true); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	sec, err := config.ResolveSecrets(s, opts.Lookup)
	if err != nil {
		return "", err
	}
	return credentials.Login(ctx, s.Name, s.Endpoint, HeaderClient(s.Endpoint, sec.Headers), o, opts)
}
