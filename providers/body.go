package providers

import (
	"errors"
	"fmt"
	"io"
)

// MaxBodyBytes bounds every provider reply the adapters read: 16 MiB.
const MaxBodyBytes = 16 << 20

// drainBytes bounds how much of an unread body DrainClose reads so the
// connection can be reused.
const drainBytes = 64 << 10

// ErrBodyTooLarge says a reply body was longer than MaxBodyBytes. It is
// permanent: asking again gets the same body.
var ErrBodyTooLarge = errors.New("providers: reply body is larger than the 16 MiB limit")

// ReadBody reads r to the end, refusing a body longer than MaxBodyBytes with
// ErrBodyTooLarge. A body of exactly MaxBodyBytes is read whole.
func ReadBody(r io.Reader) ([]byte, error) {
	return readLimited(r, MaxBodyBytes)
}

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w (read more than %d bytes)", ErrBodyTooLarge, limit)
	}
	return data, nil
}

// DrainClose reads at most 64 KiB of what is left of body and closes it, so a
// keep-alive connection can carry the next request.
func DrainClose(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, drainBytes)
	_ = body.Close()
}
