package view

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// prefixMatches bounds how many runs ResolveRunID reads for an ambiguous
// prefix: enough to say how many, to this bound, and name a few.
const prefixMatches = 100

// AmbiguousRunIDError is ResolveRunID's refusal of a prefix that more than
// one run's id begins with.
type AmbiguousRunIDError struct {
	Prefix string
	// Count is how many runs match, up to More's bound.
	Count int
	// More says more than Count runs match.
	More bool
	// Some are the first few matching ids, in byte order.
	Some []string
}

func (e *AmbiguousRunIDError) Error() string {
	n := fmt.Sprint(e.Count)
	if e.More {
		n = "more than " + n
	}
	some := make([]string, len(e.Some))
	for i, id := range e.Some {
		some[i] = trace.Truncate(id, 64)
	}
	return fmt.Sprintf("%s runs have ids that begin with %s (%s, ...), so give more of the id", n,
		trace.Truncate(e.Prefix, 64), strings.Join(some, ", "))
}

// NoRunError is ResolveRunID's answer when no run has the id, or an id
// that begins with it. It matches agentrt.ErrNotFound.
type NoRunError struct{ ID string }

func (e *NoRunError) Error() string {
	return "no run has the id " + trace.Truncate(e.ID, 64) + " or an id that begins with it"
}

func (e *NoRunError) Is(target error) bool { return target == agentrt.ErrNotFound }

// ResolveRunID turns what a person typed for a run into its id: the id
// itself when a run has it (an exact id always wins), else the one run whose
// id begins with it, read through the store's agentrt.RunIDFinder. A prefix
// that several runs share is an *AmbiguousRunIDError; one that none has, or
// any prefix on a store without the capability, is a *NoRunError.
func ResolveRunID(ctx context.Context, store agentrt.StoreReader, id string) (string, error) {
	_, err := store.GetRunCapped(ctx, id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, agentrt.ErrNotFound) {
		return "", err
	}
	f, ok := store.(agentrt.RunIDFinder)
	if !ok || id == "" {
		return "", &NoRunError{ID: id}
	}
	ids, err := f.RunIDsByPrefix(ctx, id, prefixMatches+1)
	switch {
	case err != nil:
		return "", err
	case len(ids) == 0:
		return "", &NoRunError{ID: id}
	case len(ids) == 1:
		return ids[0], nil
	}
	e := &AmbiguousRunIDError{Prefix: id, Count: len(ids), Some: ids[:min(3, len(ids))]}
	if len(ids) > prefixMatches {
		e.Count, e.More = prefixMatches, true
	}
	return "", e
}
