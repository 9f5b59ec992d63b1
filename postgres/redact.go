package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// mask stands for a hidden password in anything printed.
const mask = "xxxxx"

// secretKeys are the settings whose values are never printed.
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// isURL reports a DSN in URL form, as pgx tells the two apart.
func isURL(dsn string) bool {
	l := strings.ToLower(dsn)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Redact returns dsn as it may be printed: the same connection string with
// every password (the URL's user:password@, ?password= and ?sslpassword=,
// a key=value string's password = … however spaced or quoted) replaced by
// xxxxx. A DSN that does not parse is not printed at all.
func Redact(dsn string) string {
	if isURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "a postgres URL"
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), mask)
		}
		q := u.Query()
		changed := false
		for k := range q {
			if secretKeys[strings.ToLower(k)] {
				q[k] = []string{mask}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	kvs, ok := parseKeywords(dsn)
	if !ok {
		return "a postgres key=value string"
	}
	var b strings.Builder
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := kv.value
		if secretKeys[strings.ToLower(kv.key)] {
			v = mask
		}
		b.WriteString(kv.key + "=" + quoteValue(v))
	}
	return b.String()
}

type keyword struct{ key, value string }

// parseKeywords reads a libpq key=value connection string: keys, optional
// spaces around '=', values bare or in single quotes, backslash escapes.
func parseKeywords(s string) ([]keyword, bool) {
	var out []keyword
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return out, len(out) > 0
		}
		start := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					v.WriteByte(s[i+1])
					i += 2
					continue
				}
				i++
				if c == '\'' {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		out = append(out, keyword{key, v.String()})
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func quoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\f\v'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// looseSecret finds password values in a string that need not parse: bare,
// spaced, quoted (closed or not), and a URL's user:password@.
var looseSecret = regexp.MustCompile(`(?i)(?:ssl)?password\s*=\s*('(?:[^'\\]|\\.)*'?|[^\s&]+)|^[a-z]+://[^/:@]*:([^@/]*)@`)

// minScrub is the shortest piece of a password scrub replaces.
const minScrub = 4

// secrets returns every password-like value in dsn, whether or not it
// parses, each whole and word by word, longest first, for scrubbing.
func secrets(dsn string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		// Pieces shorter than minScrub would replace ordinary text; the
		// forms that parse are redacted by structure, not by this.
		if len(s) >= minScrub && s != mask {
			out = append(out, s)
		}
	}
	for _, m := range looseSecret.FindAllStringSubmatch(dsn, -1) {
		for _, g := range m[1:] {
			if g == "" {
				continue
			}
			add(g)
			t := strings.Trim(g, "'")
			add(t)
			if dec, err := url.QueryUnescape(t); err == nil {
				add(dec)
			}
			for _, w := range strings.Fields(t) {
				add(strings.Trim(w, "'"))
			}
		}
	}
	if kvs, ok := parseKeywords(dsn); ok && !isURL(dsn) {
		for _, kv := range kvs {
			if secretKeys[strings.ToLower(kv.key)] {
				add(kv.value)
			}
		}
	}
	if u, err := url.Parse(dsn); err == nil && isURL(dsn) {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for k, vs := range u.Query() {
			if secretKeys[strings.ToLower(k)] {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	// Longest first, so a word of a longer secret never leaves the rest.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// scrub replaces every password-like value of dsn in msg.
func scrub(msg, dsn string) string {
	for _, s := range secrets(dsn) {
		msg = strings.ReplaceAll(msg, s, mask)
		if e := url.QueryEscape(s); e != s {
			msg = strings.ReplaceAll(msg, e, mask)
		}
	}
	return msg
}

// safeError is an error whose text has had dsn's secrets scrubbed; it
// still unwraps to the cause, so errors.Is and errors.As see through it.
type safeError struct {
	msg string
	err error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.err }

// parseError says a DSN does not parse without repeating it: pgx's own
// message quotes the string, redacted only in the forms it recognises.
func parseError(name, dsn string, err error) error {
	detail := "it does not parse"
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if inner := pe.Unwrap(); inner != nil {
			var ue *url.Error
			if errors.As(inner, &ue) {
				inner = ue.Err
			}
			detail += " (" + inner.Error() + ")"
		}
	}
	return &safeError{msg: scrub("agentrt: postgres DSN "+name+": "+detail, dsn), err: err}
}

// wrap prefixes err with the DSN's printable name and scrubs the result.
// A refused login is said in one sentence rather than pgx's chain of
// causes; the cause still unwraps.
func wrap(name, dsn string, err error) error {
	detail := err.Error()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000") {
		user := "the user"
		if cfg, perr := pgconn.ParseConfig(dsn); perr == nil && cfg.User != "" {
			user = fmt.Sprintf("user %q", cfg.User)
		}
		detail = "the server refused to log in " + user + ": the password is wrong or the server does not let that user in from here (SQLSTATE " + pe.Code + ")"
	}
	return &safeError{msg: scrub("agentrt: postgres "+name+": "+detail, dsn), err: err}
}
