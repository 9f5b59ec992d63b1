package cel

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	celgo "cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"golang.org/x/text/unicode/norm"
)

// InexactNumberError is a number in a request's arguments that a double
// cannot hold exactly, such as 1000.00000000000000001: an expression
// would compare the double (1000) while the tool receives the literal.
// The policy refuses such a request before any rule runs.
type InexactNumberError struct {
	// Literal is the number as written, cut to 40 bytes.
	Literal string
}

func (e *InexactNumberError) Error() string {
	return fmt.Sprintf("the number %s cannot be held exactly by a double, so the policy cannot compare it; send it with at most 15 significant digits, or as a string", e.Literal)
}

// exactDouble parses a JSON number that is not a 64-bit integer as a
// double, refusing one the double does not hold: the literal's value must
// be the double's shortest decimal form (0.1) or the double's exact value
// (2^64 written out). A literal of at most 15 significant digits whose
// double is normal always round-trips, so only longer ones (and zeros,
// subnormals) are compared exactly.
func exactDouble(lit string) (float64, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, fmt.Errorf("the number %.40s is beyond a double's range", lit)
	}
	digits := significantDigits(lit)
	if digits == 0 || (digits <= 15 && math.Abs(f) >= 0x1p-1022) {
		return f, nil // a zero, or a short literal of a normal double
	}
	want, ok := new(big.Rat).SetString(lit)
	if ok {
		if short, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64)); ok2 && want.Cmp(short) == 0 {
			return f, nil
		}
		if exact := new(big.Rat).SetFloat64(f); exact != nil && want.Cmp(exact) == 0 {
			return f, nil
		}
	}
	if len(lit) > 40 {
		lit = lit[:40] + "…"
	}
	return 0, &InexactNumberError{Literal: lit}
}

// significantDigits counts a JSON number's mantissa digits from the first
// non-zero one, trailing zeros included (an over-count only sends the
// literal to the exact comparison).
func significantDigits(lit string) int {
	n, started := 0, false
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c == 'e' || c == 'E' {
			break
		}
		if c < '0' || c > '9' {
			continue
		}
		if c != '0' {
			started = true
		}
		if started {
			n++
		}
	}
	return n
}

// The helpers a policy compares strings with, so that two spellings of
// one name cannot pass a rule meant for the other.
//
//	nfc(s)        s in Unicode normalization form C
//	clean_path(p) p with //, /./ and .. resolved (path.Clean); an error
//	              (which fails the policy closed) when p holds a NUL, is
//	              not valid UTF-8, is not already NFC, or holds a
//	              compatibility character that stands for '/', '\' or '.'
//	              (a fullwidth solidus, a one-dot leader)
func helperFunctions() []celgo.EnvOption {
	return []celgo.EnvOption{
		celgo.Function("nfc", celgo.Overload("nfc_string", []*celgo.Type{celgo.StringType}, celgo.StringType,
			celgo.UnaryBinding(func(v ref.Val) ref.Val {
				s := string(v.(types.String))
				if !utf8.ValidString(s) {
					return types.NewErr("nfc: the string is not valid UTF-8")
				}
				return types.String(norm.NFC.String(s))
			}))),
		celgo.Function("clean_path", celgo.Overload("clean_path_string", []*celgo.Type{celgo.StringType}, celgo.StringType,
			celgo.UnaryBinding(func(v ref.Val) ref.Val {
				p, err := CleanPath(string(v.(types.String)))
				if err != nil {
					return types.NewErr("clean_path: %v", err)
				}
				return types.String(p)
			}))),
	}
}

var errEmptyPath = errors.New("the path is empty")

// CleanPath is clean_path: p with //, /./ and .. resolved, or an error for
// a path that is empty, holds a NUL, is not valid UTF-8, is not in NFC, or
// holds a compatibility character standing for '/', '\' or '.'.
func CleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errEmptyPath
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New("the path holds a NUL byte")
	case !utf8.ValidString(p):
		return "", errors.New("the path is not valid UTF-8")
	case !norm.NFC.IsNormalString(p):
		return "", errors.New("the path is not in Unicode normalization form C (an accent written as a separate mark?)")
	}
	for _, r := range p {
		if r < utf8.RuneSelf {
			continue
		}
		if k := norm.NFKC.String(string(r)); strings.ContainsAny(k, "/\\.") {
			return "", fmt.Errorf("the path holds %U, which stands for %q", r, k)
		}
	}
	return path.Clean(p), nil
}
