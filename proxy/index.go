package proxy

import "github.com/agentrt/agentrt/proxy/internal/index"

// The call index lives in proxy/internal/index, which holds every
// statement on its tables; these are its names as package proxy has
// always exported them.

// Index is the proxy's table of calls in its own SQLite file (ADR 0006),
// as a caller outside the proxy opens it: to migrate it and close it.
type Index struct{ ix *index.Index }

// OpenIndex opens the index at path, creating it owner-only when it does
// not exist and applying the missing migrations. It refuses a symbolic
// link, a file another account owns or others can write, a file holding a
// trigger or a view, and a file at a newer schema version, before it
// writes anything.
func OpenIndex(path string) (*Index, error) {
	ix, err := index.Open(path)
	if err != nil {
		return nil, err
	}
	return &Index{ix}, nil
}

// Path is the index file.
func (ix *Index) Path() string { return ix.ix.Path() }

// Close stops the writer once queued updates are done and closes the file.
func (ix *Index) Close() error { return ix.ix.Close() }

// IndexSchemaVersion is the index schema this build writes and reads.
const IndexSchemaVersion = index.SchemaVersion

// ErrIndexSchema marks an index whose schema this build does not know.
var ErrIndexSchema = index.ErrSchema

// IndexSchemaError names an index written by a newer build, or one whose
// schema holds what the migrations never create.
type IndexSchemaError = index.SchemaError

// CallOutcome is what came of one proxied call, as the index settles it.
type CallOutcome = index.CallOutcome

// The outcomes; index.CallOutcome's constants say what each means.
const (
	OutcomeSucceeded       = index.OutcomeSucceeded
	OutcomeFailed          = index.OutcomeFailed
	OutcomeUnrecorded      = index.OutcomeUnrecorded
	OutcomeUnknown         = index.OutcomeUnknown
	OutcomeDenied          = index.OutcomeDenied
	OutcomeInvalid         = index.OutcomeInvalid
	OutcomeNotExecuted     = index.OutcomeNotExecuted
	OutcomeRejected        = index.OutcomeRejected
	OutcomeExpired         = index.OutcomeExpired
	OutcomeUnknownRejected = index.OutcomeUnknownRejected
	OutcomeUnknownDenied   = index.OutcomeUnknownDenied
)
