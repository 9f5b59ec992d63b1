// Package backend opens an agentrt.Store named by a URL, in the style of
// database/sql: a storage backend registers itself for its URL schemes in an
// init function, and a program that links it (a blank import) can open
// those URLs with [Open].
//
//	import (
//		"github.com/agentrt/agentrt/backend"
//		_ "github.com/agentrt/agentrt/postgres" // postgres:// and postgresql://
//		_ "github.com/agentrt/agentrt/sqlite"   // a plain path and sqlite:
//	)
//
//	st, err := backend.Open(ctx, dsn, true)
//
// A string with no registered scheme is a SQLite file path, so a file whose
// name holds a colon still opens as a file; a string with "://" after an
// unregistered scheme is refused, naming the backends this program has.
package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentrt/agentrt"
)

// Opener is a storage backend as a registry entry: what opens, creates and
// redacts the DSNs of its schemes. (It is not a Driver: an agentrt.Driver
// runs an agent's loop.)
type Opener interface {
	// Name is the backend's name for people ("SQLite", "PostgreSQL").
	Name() string
	// OpenExisting opens an existing agentrt database named by dsn: it
	// never creates or migrates one, refuses any schema but its build's,
	// and, read-only, never writes.
	OpenExisting(ctx context.Context, dsn string, readOnly bool) (agentrt.Store, error)
	// Create opens the database, creating it or applying the missing
	// migrations: what a Worker or a Driver does at start.
	Create(ctx context.Context, dsn string) (agentrt.Store, error)
	// Redact returns dsn as it may be printed: without any password or
	// other secret, whatever form dsn is written in.
	Redact(dsn string) string
}

// Claimer is an Opener that also serves some strings with no scheme:
// Postgres's key=value connection strings.
type Claimer interface {
	Claims(dsn string) bool
}

// FileScheme is the scheme a plain path stands for.
const FileScheme = "sqlite"

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes an opener available under scheme (lower case, no colon).
// Registering one scheme twice, or a nil opener, panics, as database/sql's
// Register does.
func Register(scheme string, o Opener) {
	if o == nil {
		panic("agentrt/backend: Register of a nil opener for " + scheme)
	}
	if scheme == "" || scheme != strings.ToLower(scheme) || strings.ContainsAny(scheme, ":/") {
		panic("agentrt/backend: Register of an invalid scheme " + scheme)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("agentrt/backend: Register called twice for " + scheme)
	}
	openers[scheme] = o
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Backends returns the names of the registered backends, sorted and
// without repeats (PostgreSQL registers two schemes).
func Backends() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for _, o := range openers {
		if n := o.Name(); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// ErrUnknownScheme is the error of a URL whose scheme no linked backend
// registered.
var ErrUnknownScheme = errors.New("agentrt: no backend for that URL scheme")

// UnknownSchemeError names a scheme no backend in this program registered,
// and the schemes that are.
type UnknownSchemeError struct {
	Scheme     string
	Registered []string
}

func (e *UnknownSchemeError) Error() string {
	return fmt.Sprintf("agentrt: no backend in this program opens %s:// URLs (it has %s)", e.Scheme, strings.Join(e.Registered, ", "))
}

// Is matches ErrUnknownScheme.
func (e *UnknownSchemeError) Is(target error) bool { return target == ErrUnknownScheme }

// Scheme returns the scheme dsn names and the opener registered for it: a
// registered scheme before the first colon, else the file scheme for a
// plain path. A string with "://" whose scheme is not registered is an
// *UnknownSchemeError.
func Scheme(dsn string) (string, Opener, error) {
	mu.RLock()
	defer mu.RUnlock()
	if i := strings.IndexByte(dsn, ':'); i > 0 {
		s := strings.ToLower(dsn[:i])
		if o, ok := openers[s]; ok {
			return s, o, nil
		}
		if strings.HasPrefix(dsn[i:], "://") && validScheme(s) {
			return s, nil, &UnknownSchemeError{Scheme: s, Registered: sortedKeys()}
		}
	}
	for _, s := range sortedKeys() {
		if c, ok := openers[s].(Claimer); ok && c.Claims(dsn) {
			o := openers[s]
			return s, o, nil
		}
	}
	o, ok := openers[FileScheme]
	if !ok {
		return FileScheme, nil, &UnknownSchemeError{Scheme: FileScheme, Registered: sortedKeys()}
	}
	return FileScheme, o, nil
}

func sortedKeys() []string {
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// validScheme is RFC 3986's scheme: a letter, then letters, digits, + - .
func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// Open opens the existing database dsn names, read-only when asked, with
// the backend registered for its scheme. It never creates or migrates.
func Open(ctx context.Context, dsn string, readOnly bool) (agentrt.Store, error) {
	_, o, err := Scheme(dsn)
	if err != nil {
		return nil, err
	}
	return o.OpenExisting(ctx, dsn, readOnly)
}

// Create opens the database dsn names, creating it or applying its missing
// migrations, with the backend registered for its scheme.
func Create(ctx context.Context, dsn string) (agentrt.Store, error) {
	_, o, err := Scheme(dsn)
	if err != nil {
		return nil, err
	}
	return o.Create(ctx, dsn)
}

// Redact returns dsn as it may be printed, by its backend's rules. A dsn no
// backend claims is replaced whole, since nothing is known of its form.
func Redact(dsn string) string {
	s, o, err := Scheme(dsn)
	if err != nil {
		return "a " + s + ":// URL"
	}
	return o.Redact(dsn)
}
