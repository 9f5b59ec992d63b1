package credentials

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/agentrt/agentrt/trace"
)

// Stored is the runtime OAuthHandler of an authorization-code
// server: the tokens login stored, refreshed through x/oauth2 (as the SDK
// does) and written back, re-read when a new login replaces the file. It
// never starts a login itself: a 401 it cannot answer with a refresh
// marks the server as needing one.
type Stored struct {
	server, endpoint, path string
	secret                 func() (string, error)
	onNeeded               func(string)

	mu     sync.Mutex
	stamp  Stamp
	cfg    *oauth2.Config
	saved  *Tokens
	src    oauth2.TokenSource
	failed string // why the login no longer works; "" while it does
}

// Stamp tells a file's versions apart: a token file rewritten by a new
// login has another.
type Stamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

// StampOf is path's stamp; false when it cannot be read.
func StampOf(path string) (Stamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Stamp{}, false
	}
	return Stamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}, true
}

// reloadLocked reads the token file when it changed since it was read
// (or always, when force is set).
func (l *Stored) reloadLocked(force bool) error {
	st, ok := StampOf(l.path)
	if !ok {
		l.src, l.cfg = nil, nil
		return &LoginNeededError{Server: l.server, Reason: "no login yet"}
	}
	if !force && st == l.stamp && l.cfg != nil {
		return nil
	}
	l.stamp = st
	t, err := ReadTokens(l.path)
	if err != nil {
		l.src, l.cfg = nil, nil
		return &LoginNeededError{Server: l.server, Reason: "the token file cannot be read: " + trace.Sanitize(err.Error())}
	}
	if t.Server != l.server || t.Endpoint != l.endpoint {
		l.src, l.cfg = nil, nil
		return &LoginNeededError{Server: l.server, Reason: "the tokens were obtained for another server or endpoint"}
	}
	secret := t.ClientSecret
	if l.secret != nil {
		if secret, err = l.secret(); err != nil {
			return err
		}
	}
	l.cfg = &oauth2.Config{ClientID: t.ClientID, ClientSecret: secret, Scopes: t.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: t.AuthURL, TokenURL: t.TokenURL, AuthStyle: t.AuthStyle}}
	l.saved = t
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, HTTPClient(l.endpoint))
	l.src = l.cfg.TokenSource(ctx, t.Token)
	l.failed = ""
	return nil
}

// Usable reports whether the login works, as far as the proxy knows: a
// token file rewritten since a failure is read again.
func (l *Stored) Usable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadLocked(false); err != nil {
		return false
	}
	return l.failed == "" && l.src != nil
}

// TokenSource is the login itself; its Token refreshes as needed.
func (l *Stored) TokenSource(context.Context) (oauth2.TokenSource, error) { return l, nil }

// Token returns a valid access token, refreshing and storing it when the
// stored one expired; a refresh the server refuses marks the login
// failed.
func (l *Stored) Token() (*oauth2.Token, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadLocked(false); err != nil {
		var le *LoginNeededError
		if errors.As(err, &le) {
			return nil, l.failLocked(le.Reason)
		}
		return nil, err
	}
	if l.failed != "" {
		return nil, &LoginNeededError{Server: l.server, Reason: l.failed}
	}
	t, err := l.src.Token()
	if err != nil {
		return nil, l.failLocked("the token could not be refreshed")
	}
	l.keepLocked(t)
	return t, nil
}

// keepLocked writes a refreshed token back (a rotated refresh token is
// good only once).
func (l *Stored) keepLocked(t *oauth2.Token) {
	old := l.saved.Token
	if old != nil && t.AccessToken == old.AccessToken && t.RefreshToken == old.RefreshToken {
		return
	}
	next := *l.saved
	tok := *t
	if tok.RefreshToken == "" && old != nil {
		tok.RefreshToken = old.RefreshToken
	}
	next.Token = &tok
	if err := next.write(l.path); err != nil {
		// The token works for this process; the next start refreshes again.
		return
	}
	l.saved = &next
	l.stamp, _ = StampOf(l.path)
}

func (l *Stored) failLocked(reason string) error {
	if l.failed == "" {
		l.failed = reason
		if l.onNeeded != nil {
			l.onNeeded(l.server)
		}
	}
	return &LoginNeededError{Server: l.server, Reason: reason}
}

// Authorize answers a 401 (or a 403 asking for more scope) by refreshing
// once; when the server still refuses, or the refresh is refused, the
// login is marked failed and the request is never sent again on it.
func (l *Stored) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden {
		insufficient := slices.ContainsFunc(challenges, func(c oauthex.Challenge) bool { return c.Params["error"] == "insufficient_scope" })
		if !insufficient {
			// Not about authorization: the retry answers as the server does.
			return nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.rememberStepUpLocked(challenges)
		return l.failLocked("the server asks for more scope than the login granted")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != "" {
		return &LoginNeededError{Server: l.server, Reason: l.failed}
	}
	sent := bearerOf(req)
	if l.saved != nil && l.saved.Token != nil && sent == l.saved.Token.AccessToken && l.saved.Token.RefreshToken != "" {
		// The server refused a token we think valid: refresh once.
		expired := *l.saved.Token
		expired.Expiry = time.Unix(1, 0)
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, HTTPClient(l.endpoint))
		if t, err := l.cfg.TokenSource(ctx, &expired).Token(); err == nil {
			l.src = l.cfg.TokenSource(ctx, t)
			l.keepLocked(t)
			return nil
		}
	} else if l.saved != nil && l.saved.Token != nil && sent != l.saved.Token.AccessToken {
		// A token newer than the one refused is already stored: retry.
		return nil
	}
	return l.failLocked("the server refused the stored login")
}

// rememberStepUpLocked writes the scopes a 403 challenge asks for into the
// token file, for the next login to request.
func (l *Stored) rememberStepUpLocked(challenges []oauthex.Challenge) {
	if l.saved == nil {
		return
	}
	var want []string
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			want = append(want, strings.Fields(c.Params["scope"])...)
		}
	}
	next := *l.saved
	added := false
	for _, sc := range want {
		if !slices.Contains(next.StepUp, sc) && !slices.Contains(next.Scopes, sc) {
			next.StepUp = append(slices.Clone(next.StepUp), sc)
			added = true
		}
	}
	if !added || next.write(l.path) != nil {
		return
	}
	l.saved = &next
	l.stamp, _ = StampOf(l.path)
}

func bearerOf(req *http.Request) string {
	const p = "Bearer "
	h := req.Header.Get("Authorization")
	if len(h) > len(p) && http.CanonicalHeaderKey(h[:6]) == "Bearer" {
		return h[len(p):]
	}
	return ""
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
