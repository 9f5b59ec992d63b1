package cel

import (
	"errors"
	"fmt"

	"cel.dev/cel-go/interpreter"

	"github.com/agentrt/agentrt/internal/files"
)

var (
	// ErrInvalidPolicy: a policy file was refused at load: it does not
	// parse strictly, breaks the file format, or an expression in it does
	// not compile or type-check.
	ErrInvalidPolicy = errors.New("celpolicy: invalid policy file")
	// ErrInsecureFile: a policy file is a symbolic link, not a regular file,
	// not owned by the effective user, writable by group or others, swapped
	// while it was opened or larger than MaxFileBytes. It is
	// agentrt.ErrInsecureMode, which every reader of a trusted file
	// returns.
	ErrInsecureFile = files.ErrInsecureMode
	// ErrEvaluation: an expression failed while judging a request. The
	// policy answers with an error, which ends the run as a policy failure;
	// it never allows.
	ErrEvaluation = errors.New("celpolicy: evaluation failed")
	// ErrCostLimit: an expression used up its cost limit while judging a
	// request. It also matches ErrEvaluation.
	ErrCostLimit = errors.New("celpolicy: cost limit exhausted")
)

// FileError says where and why a policy file was refused. Line and Column
// are 1-based positions in the file, zero when unknown; Rule is the rule's
// name (or "default"), empty when the refusal is not inside a rule.
type FileError struct {
	Path   string
	Rule   string
	Field  string
	Line   int
	Column int
	Reason string
}

func (e *FileError) Error() string {
	where := e.Path
	if where == "" {
		where = "policy"
	}
	if e.Line > 0 {
		where += fmt.Sprintf(":%d:%d", e.Line, e.Column)
	}
	what := ""
	if e.Rule != "" {
		what = fmt.Sprintf("rule %q: ", e.Rule)
	}
	if e.Field != "" {
		what += e.Field + ": "
	}
	return fmt.Sprintf("celpolicy: %s: %s%s", where, what, e.Reason)
}

// Is matches ErrInvalidPolicy.
func (e *FileError) Is(target error) bool { return target == ErrInvalidPolicy }

// EvalError says which rule's expression failed on a request. Field is
// "when", "presentation.KEY" or "capability.KEY", or "args" when the
// request's arguments could not be handed to the expressions.
type EvalError struct {
	Rule   string
	Field  string
	Reason string
	// CostExceeded is set when the expression used up its cost limit.
	CostExceeded bool
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("celpolicy: rule %q: %s: %s", e.Rule, e.Field, e.Reason)
}

// Is matches ErrEvaluation, and ErrCostLimit when the cost ran out.
func (e *EvalError) Is(target error) bool {
	return target == ErrEvaluation || (e.CostExceeded && target == ErrCostLimit)
}

// evalError wraps an error from a CEL evaluation, telling a cost limit from
// any other failure by its type.
func evalError(rule, field string, err error) *EvalError {
	var ce interpreter.EvalCancelledError
	if errors.As(err, &ce) && ce.Cause == interpreter.CostLimitExceeded {
		return &EvalError{Rule: rule, Field: field, Reason: "the expression used up its cost limit", CostExceeded: true}
	}
	return &EvalError{Rule: rule, Field: field, Reason: err.Error()}
}
