package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

// Pipelining. On an engine whose driver can send many statements in one
// round trip (the dialect's ExecBatch: Postgres's extended protocol), a
// transaction's writes do not each wait for the server: they wait in the
// transaction and go together before its next read and before its commit.
// Every statement is still checked (a compare-and-set must change exactly
// one row, an error is an error) when its result arrives; if any failed,
// the attempt is void: runBatch rolls it back and runs it again with every
// statement executed where it is made, so each fn sees each statement's own
// outcome at the point it made it, exactly as without pipelining. A write
// rarely fails, so the second attempt is rare.

// Statement is one statement of a pipelined batch: its query (already
// rebound for the dialect) and its arguments.
type Statement struct {
	Query string
	Args  []any
}

// ExecBatch sends stmts on the writer's connection, inside the
// transaction it has open, in one round trip, and returns the rows each
// affected, in order, up to the first that failed; err is that one's error
// (or the connection's), so len(affected) is the index of the statement
// that failed. It must not return before every result has been read.
type ExecBatch func(ctx context.Context, conn *sql.Conn, stmts []Statement) (affected []int64, err error)

// errVoided is what a statement of a voided attempt returns: an earlier
// write of the transaction failed, and the attempt runs again.
var errVoided = errors.New("agentrt: an earlier write of this transaction failed; the transaction runs again one statement at a time")

// outcome says what a write's result must be.
type outcome struct {
	// one, when set, names the row's kind: exactly one row must change,
	// or the write is agentrt.ErrRunState naming it and id.
	one string
	// dup, when set, makes a constraint violation agentrt.ErrRunState
	// saying the run (id) or its step (idx) already exists.
	dup dupKind
	id  string
	idx int
}

type dupKind uint8

const (
	dupNone dupKind = iota
	dupRun
	dupStep
)

// check turns a write's result into the error its Tx method returns.
func (o outcome) check(affected int64, err error) error {
	if err != nil {
		if o.dup != dupNone && isConstraint(err) {
			if o.dup == dupStep {
				return fmt.Errorf("%w: step %d of run %s already exists", agentrt.ErrRunState, o.idx, o.id)
			}
			return fmt.Errorf("%w: run %s already exists", agentrt.ErrRunState, o.id)
		}
		return err
	}
	if o.one != "" && affected != 1 {
		return fmt.Errorf("%w: %s %s did not match the expected state", agentrt.ErrRunState, o.one, o.id)
	}
	return nil
}

// pipeState holds a pipelined attempt's writes not yet sent. voided is the
// first of them that failed: it voids the attempt.
type pipeState struct {
	pending []Statement
	wants   []outcome
	args    []any // the pending statements' arguments, end to end
	voided  error
}

func (p *pipeState) reset() {
	clear(p.pending)
	clear(p.args)
	p.pending, p.wants, p.args, p.voided = p.pending[:0], p.wants[:0], p.args[:0], nil
}

// write runs a write whose only outcome is success or an error: at once,
// or, pipelined, when the transaction next reads or commits.
func (t *tx) write(q string, want outcome, args ...any) error {
	p := t.pipe
	if p == nil {
		res, err := t.exec(q, args...)
		var n int64
		if err == nil && want.one != "" {
			n, err = res.RowsAffected()
		}
		return want.check(n, err)
	}
	if p.voided != nil {
		return errVoided
	}
	// The arguments are copied into the attempt's own buffer, so the
	// caller's slice stays its own (and, unpipelined, off the heap).
	start := len(p.args)
	p.args = append(p.args, args...)
	p.pending = append(p.pending, Statement{Query: t.s.d.Rebind(q), Args: p.args[start:len(p.args):len(p.args)]})
	p.wants = append(p.wants, want)
	return nil
}

// flushPending sends the writes waiting in the transaction and checks each
// one's result. After one failed, the attempt is void: this and every later
// statement of it returns errVoided.
func (t *tx) flushPending() error {
	p := t.pipe
	if p == nil {
		return nil
	}
	if p.voided != nil {
		return errVoided
	}
	if len(p.pending) == 0 {
		return nil
	}
	affected, err := t.s.d.ExecBatch(context.Background(), t.s.wconn, p.pending)
	for i, want := range p.wants {
		var e error
		switch {
		case i < len(affected):
			e = want.check(affected[i], nil)
		case err != nil:
			e = want.check(0, err)
		default:
			e = fmt.Errorf("agentrt: a pipelined batch of %d statements returned %d results", len(p.wants), len(affected))
		}
		if e != nil {
			p.voided = e
			break
		}
	}
	voided := p.voided
	p.reset()
	if voided != nil {
		p.voided = voided
		return errVoided
	}
	return nil
}
