package agentrt

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/files"
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
	// ErrTamperedRecord: a stored row disagrees with what the event chain
	// recorded for it (a run's limits, a grant's decision); nothing was
	// executed.
	ErrTamperedRecord = errors.New("agentrt: stored record disagrees with the event chain")
	// ErrApprovalChanged: the stored approval is not the one the operator was shown.
	ErrApprovalChanged = errors.New("agentrt: approval differs from the one shown")
	// ErrSchemaVersion: the database schema is not this build's.
	ErrSchemaVersion = errors.New("agentrt: database schema version mismatch")
	// ErrUnsafeSchema: the database schema is not exactly the one this
	// build's migrations create, so it could run its author's SQL.
	ErrUnsafeSchema = errors.New("agentrt: database schema is not the migrations'")
	// ErrInsecureMode: a file agentrt trusts (a database or its sidecar, a
	// configuration, manifest, rules, policy, key, secret or pinned keys
	// file) is a symbolic link, not a regular file, another account's,
	// writable by group or others, swapped while it was opened, or larger
	// than its reader reads. The error is an *InsecureModeError.
	ErrInsecureMode = files.ErrInsecureMode
	// ErrSymlink: a trusted path is a symbolic link; it comes with
	// ErrInsecureMode.
	ErrSymlink = files.ErrSymlink
	// ErrTooLarge: a trusted file is larger than its reader reads; it comes
	// with ErrInsecureMode.
	ErrTooLarge = files.ErrTooLarge
	// ErrRunEnded: the run already ended (completed, failed or
	// cancelled); it matches ErrRunState.
	ErrRunEnded = fmt.Errorf("agentrt: run ended (%w)", ErrRunState)
	// ErrCallRefused: Gate.Call did not run the call and recorded no
	// outcome for it: its approval was rejected or expired, its run waits
	// on another call's approval, or its run ended. The error is a
	// *CallRefusedError; a framework hands its text to the model as the
	// call's tool error.
	ErrCallRefused = errors.New("agentrt: the call was refused")
	// ErrNoToolBody: the tool is registered by spec only (SpecOnly), so
	// its body must be supplied at the call (OpenStep.ExecuteFunc); and
	// ExecuteFunc on a tool that has a body of its own.
	ErrNoToolBody = errors.New("agentrt: the tool's body is supplied at the call site")
	// ErrSessionClosed: a call on a closed or failed gate session.
	ErrSessionClosed = errors.New("agentrt: session closed")
	// ErrInvalidJSON: a consumer value was refused where it entered.
	ErrInvalidJSON = errors.New("agentrt: invalid JSON")
	// ErrInvalidConfig: a configuration value is out of bounds.
	ErrInvalidConfig = errors.New("agentrt: invalid configuration")
	// ErrUnusableUsage: a provider reported usage that cannot be charged.
	ErrUnusableUsage = errors.New("agentrt: unusable usage")
	// ErrSignature: a signed decision does not verify, names an approver
	// that is not enrolled or was removed, or says something other than
	// the decision it came with.
	ErrSignature = errors.New("agentrt: decision signature is not valid")
	// ErrUnsignedGrant: the run or its policy requires a signed grant and
	// the grant has no valid signature by an enrolled, unremoved approver
	// over the approval's hash; nothing was executed.
	ErrUnsignedGrant = errors.New("agentrt: grant requires a valid approver signature")
	// ErrInvite: an enrollment invitation is unknown, used or expired.
	ErrInvite = errors.New("agentrt: enrollment invitation is not valid")
	// ErrApproverExists: an unremoved approver already has the name, or
	// the key is already enrolled.
	ErrApproverExists = errors.New("agentrt: approver already enrolled")
)

// SignatureError says why a signed decision was refused. It matches
// ErrSignature.
type SignatureError struct {
	ApprovalID string
	ApproverID string
	Reason     string
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("agentrt: the signature on the decision of approval %s does not hold: %s", e.ApprovalID, e.Reason)
}

// Is matches ErrSignature.
func (e *SignatureError) Is(target error) bool { return target == ErrSignature }

// UnsignedGrantError says why a grant that must be signed was refused.
// Nothing was executed and the run is left as it was. It matches
// ErrUnsignedGrant, and ErrSignature when a signature was there but did not
// hold.
type UnsignedGrantError struct {
	RunID      string
	ApprovalID string
	// Required says what required the signature: "engine configuration"
	// (EngineConfig.RequireSignedGrant), "run" (its
	// Limits.RequireSignedGrant), "policy" (the policy decision's
	// RequireSignature) or "pinned keys" (EngineConfig.PinnedKeys, which
	// require a pinned signer for every grant).
	Required string
	Reason   string
	// Err is the signature's refusal, when there was a signature.
	Err error
}

func (e *UnsignedGrantError) Error() string {
	return fmt.Sprintf("agentrt: approval %s of run %s must be granted with an enrolled approver's signature (required by the %s): %s; nothing was executed",
		e.ApprovalID, e.RunID, e.Required, e.Reason)
}

// Is matches ErrUnsignedGrant.
func (e *UnsignedGrantError) Is(target error) bool { return target == ErrUnsignedGrant }

// Unwrap returns the signature's refusal, if any.
func (e *UnsignedGrantError) Unwrap() error { return e.Err }

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

// InsecureModeError names a trusted file refused for how it is stored and
// says how to fix it; its Problem says which part of the rule the file
// broke. Every reader of a trusted file returns it, so one errors.As
// handles them all. It matches ErrInsecureMode (and ErrSymlink or
// ErrTooLarge where they apply).
type InsecureModeError = files.InsecureModeError

// FileProblem is the part of the file rule a refused file broke.
type FileProblem = files.Problem

// The parts of the file rule, as InsecureModeError.Problem names them.
const (
	FileSymlink    = files.ProblemSymlink
	FileNotRegular = files.ProblemNotRegular
	FileOwner      = files.ProblemOwner
	FileWritable   = files.ProblemWritable
	FileReadable   = files.ProblemReadable
	FileChanged    = files.ProblemChanged
	FileTooLarge   = files.ProblemTooLarge
)

// UnsafeSchemaError names the first object in a database's schema that is
// not as this build's migrations create it. Triggers and views are reported
// before tables and indexes, then objects by name.
type UnsafeSchemaError struct {
	Path       string
	Type       string // as sqlite_schema names it: "trigger", "view", "table" or "index"
	Name       string
	Difference SchemaDifference
}

func (e *UnsafeSchemaError) Error() string {
	var what string
	switch e.Difference {
	case SchemaAltered:
		what = fmt.Sprintf("its %s %q is not the one agentrt's migrations create", e.Type, e.Name)
	case SchemaMissing:
		what = fmt.Sprintf("it lacks the %s %q that agentrt's migrations create", e.Type, e.Name)
	default:
		what = fmt.Sprintf("it holds %s %s named %q that agentrt's migrations do not create", article(e.Type), e.Type, e.Name)
	}
	return fmt.Sprintf("agentrt: refusing %s: %s, and agentrt never opens a database that could run its author's SQL", e.Path, what)
}

func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}

// Is matches ErrUnsafeSchema.
func (e *UnsafeSchemaError) Is(target error) bool { return target == ErrUnsafeSchema }

// SchemaDifference says how an object in a refused schema differs from the
// migrations'.
type SchemaDifference string

const (
	// SchemaExtra: the file holds an object the migrations do not create,
	// such as a trigger, a view, a table or an index of the author's.
	SchemaExtra SchemaDifference = "extra"
	// SchemaAltered: the object is the migrations', but its definition is
	// not, such as a table with a generated column, a CHECK constraint or a
	// DEFAULT expression of the author's.
	SchemaAltered SchemaDifference = "altered"
	// SchemaMissing: the migrations create the object and the file lacks it.
	SchemaMissing SchemaDifference = "missing"
)

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
	// Field is "tool", "arguments" or "hash"; "decision", "request" or
	// "decided" when the chain holds no readable step.decided,
	// approval.requested or approval.decided event for the grant; "status",
	// "decider" or "signature" when the approval.decided event says other
	// than the row.
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
	case "decided":
		return fmt.Sprintf("agentrt: approval %s of run %s is approved in its row, but the event chain holds no approval.decided event for it; nothing was executed", e.ApprovalID, e.RunID)
	case "status", "decider", "signature":
		return fmt.Sprintf("agentrt: approval %s of run %s: its row's %s differs from its approval.decided event in the chain; nothing was executed", e.ApprovalID, e.RunID, e.Field)
	case "arguments":
		return fmt.Sprintf("agentrt: approval %s of run %s grants arguments that differ from the step's decision recorded in the event chain; nothing was executed", e.ApprovalID, e.RunID)
	case "tool":
		return fmt.Sprintf("agentrt: approval %s of run %s grants tool %q, but the step's decision recorded in the event chain names %q; nothing was executed", e.ApprovalID, e.RunID, e.Granted, e.Recorded)
	}
	return fmt.Sprintf("agentrt: approval %s of run %s has %s %s, but its approval.requested event recorded %s; nothing was executed", e.ApprovalID, e.RunID, e.Field, e.Granted, e.Recorded)
}

// Is matches ErrApprovalHash and ErrTamperedRecord.
func (e *GrantMismatchError) Is(target error) bool {
	return target == ErrApprovalHash || target == ErrTamperedRecord
}

// RunRecordError says that a run's row disagrees with its run.created event:
// Field names what differs ("limits.require_signed_grant", say), Recorded
// is the chain's value and Stored the row's; Field "run.created" or
// "limits" means the event is missing or unreadable. Nothing was executed.
// It matches ErrTamperedRecord.
type RunRecordError struct {
	RunID    string
	Field    string
	Recorded string
	Stored   string
}

func (e *RunRecordError) Error() string {
	if e.Recorded == "" && e.Stored == "" {
		return fmt.Sprintf("agentrt: run %s: the event chain holds no readable %s event for it; nothing was executed", e.RunID, e.Field)
	}
	return fmt.Sprintf("agentrt: run %s is a tampered record: its row has %s = %s, but its run.created event recorded %s; nothing was executed",
		e.RunID, e.Field, e.Stored, e.Recorded)
}

// Is matches ErrTamperedRecord.
func (e *RunRecordError) Is(target error) bool { return target == ErrTamperedRecord }

// CallRefusedError says why Gate.Call refused a call. It matches
// ErrCallRefused, and Err (ErrRunEnded for a run that ended) when set.
type CallRefusedError struct {
	RunID, CallID string
	Reason        string
	Err           error
}

func (e *CallRefusedError) Error() string {
	return fmt.Sprintf("agentrt: call %s of run %s was refused: %s", e.CallID, e.RunID, e.Reason)
}

// Unwrap returns ErrCallRefused and Err.
func (e *CallRefusedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCallRefused}
	}
	return []error{ErrCallRefused, e.Err}
}
