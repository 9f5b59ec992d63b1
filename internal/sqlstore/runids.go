package sqlstore

import (
	"context"
	"errors"
	"unicode"
	"unicode/utf8"

	agentrt "github.com/agentrt/agentrt"
)

var _ agentrt.RunIDFinder = (*Store)(nil)

// RunIDsByPrefix returns at most limit ids of runs that begin with prefix,
// in byte order. It reads a range of the primary key, id >= prefix and id <
// the prefix's successor, so it touches only the ids it returns.
//
// It implements agentrt.RunIDFinder.
func (s *Store) RunIDsByPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	if prefix == "" {
		return nil, errors.New("agentrt: a run id prefix must not be empty")
	}
	if limit < 1 {
		return nil, errors.New("agentrt: a run id prefix search needs a limit of at least 1")
	}
	id := "id" + s.d.ByteOrder
	q := "SELECT id FROM runs WHERE " + id + " >= ?"
	args := []any{prefix}
	if hi, ok := prefixEnd(prefix); ok {
		q += " AND " + id + " < ?"
		args = append(args, hi)
	}
	q += " ORDER BY " + id + " LIMIT ?"
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q), append(args, limit)...)
	return scanRows(rows, err, scanString)
}

// prefixEnd is the least string greater than every string that begins with
// p, in byte order: p with its last character raised by one (UTF-8 keeps
// byte order and code point order alike, and the bound stays valid text, as
// Postgres requires). ok is false when every character is the highest, and
// no string bounds the range.
func prefixEnd(p string) (string, bool) {
	if !utf8.ValidString(p) {
		return byteEnd(p)
	}
	rs := []rune(p)
	for len(rs) > 0 {
		last := rs[len(rs)-1]
		switch {
		case last >= unicode.MaxRune:
			rs = rs[:len(rs)-1]
			continue
		case last == surrogateMin-1:
			rs[len(rs)-1] = surrogateMax + 1
		default:
			rs[len(rs)-1] = last + 1
		}
		return string(rs), true
	}
	return "", false
}

// byteEnd is prefixEnd for a prefix that is not UTF-8 (which only SQLite
// stores): its last byte under 0xff raised by one.
func byteEnd(p string) (string, bool) {
	b := []byte(p)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	return string(b), true
}

// The surrogate halves are not characters; the successor skips them.
const surrogateMin, surrogateMax = 0xd800, 0xdfff
