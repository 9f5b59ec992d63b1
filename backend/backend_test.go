package backend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/sqlite"
)

// A plain path (even one with a colon) and sqlite: URLs are SQLite; a
// scheme no backend registered is refused naming the ones that are, and
// nothing is created for it.
func TestOpen_ChoosesTheBackendByScheme(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	ctx := context.Background()
	for _, dsn := range []string{path, "sqlite:" + path, "sqlite://" + path, "SQLite:" + path} {
		s, err := backend.Open(ctx, dsn, true)
		if err != nil {
			t.Fatalf("Open(%q) = %v", dsn, err)
		}
		if got := s.(*sqlite.Store).Path(); got != path {
			t.Errorf("Open(%q) opened %q", dsn, got)
		}
		s.Close()
	}
	colon := filepath.Join(dir, "a:b.db")
	s, err := backend.Create(ctx, colon)
	if err != nil {
		t.Fatalf("Create(%q) = %v", colon, err)
	}
	s.Close()
	if _, err := os.Stat(colon); err != nil {
		t.Fatalf("a path with a colon is not a file: %v", err)
	}
	_, err = backend.Open(ctx, "mysql://root@db/agentrt", true)
	var ue *backend.UnknownSchemeError
	if !errors.As(err, &ue) || !errors.Is(err, backend.ErrUnknownScheme) || ue.Scheme != "mysql" || !slices.Contains(ue.Registered, "sqlite") {
		t.Fatalf("Open(mysql://) = %v", err)
	}
	if _, err := backend.Create(ctx, "mysql://root@db/agentrt"); !errors.Is(err, backend.ErrUnknownScheme) {
		t.Fatalf("Create(mysql://) = %v", err)
	}
	if got := backend.Redact("mysql://root:pw@db/agentrt"); got != "a mysql:// URL" {
		t.Errorf("Redact of an unknown scheme = %q", got)
	}
	// Read-only never creates.
	if _, err := backend.Open(ctx, filepath.Join(dir, "none.db"), true); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("Open of a missing file = %v", err)
	}
	if got := backend.Backends(); !slices.Contains(got, "SQLite") {
		t.Errorf("Backends() = %v", got)
	}
}

// Registering a scheme twice panics, as database/sql's Register does.
func TestRegister_TwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a second Register of sqlite did not panic")
		}
	}()
	backend.Register("sqlite", fake{})
}

type fake struct{}

func (fake) Name() string { return "fake" }
func (fake) OpenExisting(context.Context, string, bool) (agentrt.Store, error) {
	return nil, errors.New("fake")
}
func (fake) Create(context.Context, string) (agentrt.Store, error) { return nil, errors.New("fake") }
func (fake) Redact(string) string                                  { return "fake" }
