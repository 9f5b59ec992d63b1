package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentrt/agentrt/internal/canon"
	"github.com/agentrt/agentrt/internal/textcut"
)

// MaxReasonLen bounds the reason of an [*ArgsError], and of the detail in
// an [*Error], in bytes.
const MaxReasonLen = 1000

// ArgsError reports arguments refused by [Schema.Validate]. Reason is one
// line of at most [MaxReasonLen] bytes, written to be shown to the model.
type ArgsError struct {
	Reason string

	err error // the *canon.Error when the arguments were refused as JSON
}

func (e *ArgsError) Error() string { return e.Reason }

// Is reports whether target is [ErrArgs].
func (e *ArgsError) Is(target error) bool { return target == ErrArgs }

// Unwrap returns the [*canon.Error] for arguments refused as JSON, else nil.
func (e *ArgsError) Unwrap() error { return e.err }

// validateHook, when set, replaces the library's validation. Tests use it to
// make the validator panic.
var validateHook func(sch *jsonschema.Schema, v any) error

// Validate checks args against the schema. Empty args mean {}. Arguments
// that fail the boundary checks of package canon are refused with canon's
// reason before the validator sees them.
func (s *Schema) Validate(args []byte) error {
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := canon.Check(args); err != nil {
		return &ArgsError{Reason: "arguments refused: " + canonReason(err), err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// canon.Check accepted it, so this is not expected; refuse anyway.
		return &ArgsError{Reason: "arguments refused: " + canon.ReasonSyntax}
	}
	err := s.validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return &ArgsError{Reason: "arguments do not match the schema: " +
			describe(ve, MaxReasonLen-len("arguments do not match the schema: "))}
	}
	return &ArgsError{Reason: oneLine("arguments refused: "+err.Error(), MaxReasonLen)}
}

// validate runs the validator and turns a panic inside it into an error, so
// that a crash refuses the arguments instead of accepting them or taking the
// process down.
func (s *Schema) validate(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the schema validator failed: %v", r)
		}
	}()
	if validateHook != nil {
		return validateHook(s.sch, v)
	}
	return s.sch.Validate(v)
}

var printer = message.NewPrinter(language.English)

// describe writes the leaf failures of a validation error as one line of at
// most limit bytes: "at /a/b: message; at /c: message".
func describe(ve *jsonschema.ValidationError, limit int) string {
	var parts []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		part := "at " + Pointer(e.InstanceLocation) + ": " + e.ErrorKind.LocalizedString(printer)
		if !seen[part] {
			seen[part] = true
			parts = append(parts, part)
		}
	}
	walk(ve)
	if len(parts) == 0 {
		parts = append(parts, ve.ErrorKind.LocalizedString(printer))
	}
	return oneLine(strings.Join(parts, "; "), limit)
}

// Pointer writes an instance location as a JSON pointer, or "the top level".
func Pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "the top level"
	}
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}

// oneLine replaces line breaks and other control or invisible separators
// with spaces, and cuts s to at most limit bytes on a character boundary.
func oneLine(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	return clip(s, limit)
}

// clip cuts s to at most limit bytes on a character boundary, marking the
// cut with "...".
func clip(s string, limit int) string { return textcut.TruncateWith(s, limit, "...") }
