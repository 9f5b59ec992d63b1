package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrTrailingData is returned by [DecodeStrict] for bytes after the one
// JSON value.
var ErrTrailingData = errors.New("trailing data after the JSON value")

// DecodeStrict decodes exactly one JSON value from raw into v, refusing
// fields v does not have and anything after the value. It does not
// [Check] raw: a caller reading JSON from outside checks it first, so a
// repeated key cannot make two readers see two documents.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}
