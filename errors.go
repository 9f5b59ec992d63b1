package agentrt

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers branch on them with errors.Is; struct errors below
// carry fields and match their sentinel.
var (
	// ErrNotFound: the run, step, approval, spec or event does not exist.
	ErrNotFound = errors.New("agentrt: not found")
	// ErrRunState: the run or step is not in the state the operation needs; the
	// loser of a compare-and-set gets it.
	ErrRunState = errors.New("agentrt: run is not in the required state")
	// ErrRunLeased: another owner holds a live lease on the run.
	ErrRunLeased = errors.New("agentrt: run is leased by another owner")
	// ErrLeaseLost: this process no longer holds the run's lease.
	ErrLeaseLost = errors.New("agentrt: lease lost")
	// ErrNotPending: the approval has already been decided or has expired.
	ErrNotPending = errors.New("agentrt: approval is not pending")
	// ErrApprovalExpired: the approval or grant expired; it matches ErrNotPending.
	ErrApprovalExpired = fmt.Errorf("agentrt: approval expired (%w)", ErrNotPending)
	// ErrApprovalHash: the stored approval no longer matches its own hash.
	ErrApprovalHash = errors.New("agentrt: approval does not match its hash")
	// ErrApprovalChanged: the stored approval is not the one the operator was shown.
	ErrApprovalChanged = errors.New("agentrt: approval differs from the one shown")
	// ErrSchemaVersion: the database schema is not this build's.
	ErrSchemaVersion = errors.New("agentrt: database schema version mismatch")
	// ErrUnsafeSchema: the database holds a trigger or a view.
	ErrUnsafeSchema = errors.New("agentrt: database holds a trigger or view")
	// ErrInsecureMode: a database file is writable by others or not the owner's.
	ErrInsecureMode = errors.New("agentrt: database file has an insecure mode")
	// ErrSymlink: OpenExisting was given a symbolic link.
	ErrSymlink = errors.New("agentrt: database path is a symbolic link")
	// ErrSessionClosed: a call on a closed or failed gate session.
	ErrSessionClosed = errors.New("agentrt: session closed")
	// ErrInvalidJSON: a consumer value was refused where it entered.
	ErrInvalidJSON = errors.New("agentrt: invalid JSON")
	// ErrInvalidConfig: a configuration value is out of bounds.
	ErrInvalidConfig = errors.New("agentrt: invalid configuration")
	// ErrUnusableUsage: a provider reported usage that cannot be charged.
	ErrUnusableUsage = errors.New("agentrt: unusable usage")
)

// RunLeasedError says who holds the lease on a run and until when.
type RunLeasedError struct {
	RunID     string
	Owner     string
	ExpiresAt time.Time
}

func (e *RunLeasedError) Error() string {
	return fmt.Sprintf("agentrt: run %s is leased by %s until %s", e.RunID, e.Owner, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Is matches ErrRunLeased and ErrRunState.
func (e *RunLeasedError) Is(target error) bool {
	return target == ErrRunLeased || target == ErrRunState
}

// SchemaVersionError names both versions when a database is not this build's.
type SchemaVersionError struct {
	Path     string
	Database int // version recorded in the file
	Build    int // version this build writes
}

func (e *SchemaVersionError) Error() string {
	side := "older"
	if e.Database > e.Build {
		side = "newer"
	}
	return fmt.Sprintf("agentrt: database %s has schema version %d, which is %s than this build's version %d", e.Path, e.Database, side, e.Build)
}

// Is matches ErrSchemaVersion.
func (e *SchemaVersionError) Is(target error) bool { return target == ErrSchemaVersion }

// InsecureModeError names the file refused and how to fix it.
type InsecureModeError struct {
	Path   string
	Mode   uint32
	Reason string
}

func (e *InsecureModeError) Error() string {
	return fmt.Sprintf("agentrt: refusing %s: %s (mode %04o); make it owner-only with chmod 600 and chown it to the account that runs agentrt", e.Path, e.Reason, e.Mode)
}

// Is matches ErrInsecureMode.
func (e *InsecureModeError) Is(target error) bool { return target == ErrInsecureMode }

// UnsafeSchemaError names the trigger or view found in a database.
type UnsafeSchemaError struct {
	Path string
	Type string // "trigger" or "view"
	Name string
}

func (e *UnsafeSchemaError) Error() string {
	return fmt.Sprintf("agentrt: refusing %s: it holds a %s named %q, and agentrt never opens a database that can run its author's SQL", e.Path, e.Type, e.Name)
}

// Is matches ErrUnsafeSchema.
func (e *UnsafeSchemaError) Is(target error) bool { return target == ErrUnsafeSchema }

// SymlinkError names the link refused by OpenExisting.
type SymlinkError struct{ Path string }

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("agentrt: refusing %s: it is a symbolic link; name the database file itself", e.Path)
}

// Is matches ErrSymlink.
func (e *SymlinkError) Is(target error) bool { return target == ErrSymlink }

// JSONError says why a consumer value was refused where it entered.
type JSONError struct {
	What   string // "arguments", "result", "capability", ...
	Reason string // e.g. "nested deeper than 256 levels"
}

func (e *JSONError) Error() string {
	if e.What == "" {
		return "agentrt: invalid JSON: " + e.Reason
	}
	return fmt.Sprintf("agentrt: invalid JSON in %s: %s", e.What, e.Reason)
}

// Is matches ErrInvalidJSON.
func (e *JSONError) Is(target error) bool { return target == ErrInvalidJSON }

// ConfigError names the configuration field and the bound it broke.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("agentrt: invalid configuration: %s %s", e.Field, e.Reason)
}

// Is matches ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// GrantMismatchError says what of a granted approval differs from what the
// event chain recorded for it: the step's decision (its tool and canonical
// arguments) or the hash in the approval's approval.requested event. A row
// rewritten with its hash recomputed verifies against itself; it does not
// match the chain. It matches ErrApprovalHash.
type GrantMismatchError struct {
	RunID      string
	ApprovalID string
	// Field is "tool", "arguments" or "hash"; "decision" or "request"
	// when the chain holds no readable step.decided or approval.requested
	// event for the grant.
	Field string
	// Recorded is what the chain holds, Granted what the approval row
	// holds: tool names, canonical arguments, or hashes.
	Recorded string
	Granted  string
}

func (e *GrantMismatchError) Error() string {
	switch e.Field {
	case "decision", "request":
		return fmt.Sprintf("agentrt: approval %s of run %s: the event chain holds no readable record of its %s; nothing was executed", e.ApprovalID, e.RunID, e.Field)
	case "arguments":
		return fmt.Sprintf("agentrt: approval %s of run %s grants arguments that differ from the step's decision recorded in the event chain; nothing was executed", e.ApprovalID, e.RunID)
	case "tool":
		return fmt.Sprintf("agentrt: approval %s of run %s grants tool %q, but the step's decision recorded in the event chain names %q; nothing was executed", e.ApprovalID, e.RunID, e.Granted, e.Recorded)
	}
	return fmt.Sprintf("agentrt: approval %s of run %s has %s %s, but its approval.requested event recorded %s; nothing was executed", e.ApprovalID, e.RunID, e.Field, e.Granted, e.Recorded)
}

// Is matches ErrApprovalHash.
func (e *GrantMismatchError) Is(target error) bool { return target == ErrApprovalHash }
