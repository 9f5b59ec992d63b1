package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// ErrNotErasable is returned when the store cannot erase (it is not an
// Eraser).
var ErrNotErasable = errors.New("agentrt: the store cannot erase content")

// Eraser is the optional capability of a Store that erases runs' content.
type Eraser interface {
	// EraseRuns erases the content of each run in one transaction: every
	// run named is erased, or none is. It refuses a run that is not
	// terminal, has a pending approval, or was erased before.
	EraseRuns(ctx context.Context, r EraseRequest) ([]ErasedRun, []Event, error)
	// ErasableRuns lists terminal, unerased runs finished before a time,
	// oldest first.
	ErasableRuns(ctx context.Context, q ErasableQuery) ([]Run, error)
}

// Settler is the optional capability of an Eraser whose files may keep
// copies of erased content after the erasure commits (SQLite's
// write-ahead log) until Settle removes them. Erase settles after each
// erasure, Retain every few batches and at its end.
type Settler interface {
	Settle(ctx context.Context) error
}

// EraseRequest names the runs to erase, who erases them and why.
type EraseRequest struct {
	RunIDs []string
	By     string
	Reason string
	// At is the time run.erased records.
	At time.Time
}

// ErasedRun says what erasure removed of one run.
type ErasedRun struct {
	RunID string `json:"run_id"`
	// Events is how many of the run's events had their payloads erased.
	Events int `json:"events"`
	// Rows counts the rows whose content was removed, by table.
	Rows map[string]int `json:"rows"`
	// Seq is the run.erased event's place in the chain.
	Seq int64 `json:"seq"`
}

// ErasableQuery selects runs for retention.
type ErasableQuery struct {
	// FinishedBefore is the cut: runs finished strictly before it.
	FinishedBefore time.Time
	// Statuses, when not empty, keeps only runs in one of them (each
	// terminal).
	Statuses []RunStatus
	// Limit bounds how many runs are returned; at most MaxEraseBatch.
	Limit int
	// Offset skips that many matching runs first (runs retention could
	// not erase, which stay first in line).
	Offset int
}

// MaxEraseBatch bounds the runs one erase transaction takes.
const MaxEraseBatch = 500

// maxEraseText bounds who erases and why, in bytes.
const maxEraseText = 1024

// Erase removes the content of a terminal run everywhere the store keeps
// it (see docs/retention.md) and appends a run.erased event saying who did
// it and why; the chain still verifies.
func Erase(ctx context.Context, store Store, runID, by, reason string) (ErasedRun, error) {
	return Operator{Store: store}.Erase(ctx, runID, by, reason)
}

// Erase is agentrt.Erase on the operator's clock, its observer hearing the
// run.erased event.
func (o Operator) Erase(ctx context.Context, runID, by, reason string) (ErasedRun, error) {
	out, err := o.EraseRuns(ctx, []string{runID}, by, reason)
	if len(out) == 0 {
		return ErasedRun{}, err
	}
	return out[0], err
}

// EraseRuns erases several terminal runs in one transaction, and settles
// the store's files (Settler).
func (o Operator) EraseRuns(ctx context.Context, runIDs []string, by, reason string) ([]ErasedRun, error) {
	out, err := o.eraseRuns(ctx, runIDs, by, reason)
	if len(out) == 0 {
		return nil, err
	}
	if s, ok := o.Store.(Settler); ok {
		if serr := s.Settle(ctx); serr != nil && err == nil {
			err = serr
		}
	}
	return out, err
}

func (o Operator) eraseRuns(ctx context.Context, runIDs []string, by, reason string) ([]ErasedRun, error) {
	switch {
	case by == "":
		return nil, &ConfigError{Field: "by", Reason: "must name who erases the run"}
	case reason == "":
		return nil, &ConfigError{Field: "reason", Reason: "must say why the run is erased"}
	case len(by) > maxEraseText || len(reason) > maxEraseText:
		return nil, &ConfigError{Field: "by/reason", Reason: fmt.Sprintf("at most %d bytes each", maxEraseText)}
	case len(runIDs) == 0 || len(runIDs) > MaxEraseBatch:
		return nil, &ConfigError{Field: "runs", Reason: fmt.Sprintf("erase 1 to %d runs at once, not %d", MaxEraseBatch, len(runIDs))}
	}
	er, ok := o.Store.(Eraser)
	if !ok {
		return nil, ErrNotErasable
	}
	// A store may return what it erased with an error about what came
	// after the commit (a log it could not empty): the erasure stands.
	out, evs, err := er.EraseRuns(ctx, EraseRequest{RunIDs: runIDs, By: by, Reason: reason, At: o.now()})
	if len(out) == 0 {
		return nil, err
	}
	if o.Observer != nil {
		for _, e := range evs {
			o.Observer(e)
		}
	}
	return out, err
}

// RedactPayload is e's payload without its content: every field the
// catalogue marks content or a digest of content is zeroed. A payload the
// catalogue cannot read (an unknown type, a malformed payload) is removed
// whole, leaving {}.
func RedactPayload(e Event) (json.RawMessage, error) {
	if t, ok := catalogueIndex[e.Type]; ok && !holdsContent(t) && json.Valid(e.Payload) {
		// Nothing to remove: the payload is kept as it is.
		return e.Payload, nil
	}
	v, err := DecodePayload(e)
	if err != nil {
		return json.RawMessage("{}"), nil
	}
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	rv.Set(reflect.ValueOf(v))
	redact(rv)
	return json.Marshal(rv.Interface())
}

// Redacted returns v (a stored decision, observation, policy decision or
// request) with its content fields and content digests zeroed.
func Redacted[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	redact(rv)
	return v
}

// contentTypes memoizes holdsContent by type: the catalogue is fixed.
var contentTypes sync.Map // reflect.Type -> bool

// holdsContent reports whether t has, at any depth, a field tagged content
// or digest.
func holdsContent(t reflect.Type) bool {
	if v, ok := contentTypes.Load(t); ok {
		return v.(bool)
	}
	var walk func(t reflect.Type, depth int) bool
	walk = func(t reflect.Type, depth int) bool {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 8 {
			return false
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if a := f.Tag.Get("audit"); a == "content" || a == "digest" {
				return true
			}
			if walk(f.Type, depth+1) {
				return true
			}
		}
		return false
	}
	v := walk(t, 0)
	contentTypes.Store(t, v)
	return v
}

func redact(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			redact(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			switch f.Tag.Get("audit") {
			case "content", "digest":
				v.Field(i).SetZero()
			default:
				redact(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct || v.Type().Elem().Kind() == reflect.Pointer {
			for i := 0; i < v.Len(); i++ {
				redact(v.Index(i))
			}
		}
	}
}
