package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/termsafe"
	"github.com/agentrt/agentrt/trace"
)

// timeLayout is how Writer prints an event's time.
const timeLayout = "2006-01-02 15:04:05.000 -0700"

// typeWidth is the column width Writer pads event types to.
const typeWidth = 22

// Writer returns an Observer that prints one line per event to w:
//
//	<time>  <type padded to 22>  run=<trace.ShortRunID of the run id> <payload>
//
// The time is local, as 2006-01-02 15:04:05.000 -0700. The run id and type
// pass through trace.Sanitize. A payload that is valid JSON is printed compacted and
// sanitized, with one difference from trace.Sanitize: backslashes are not doubled,
// because JSON already writes a literal backslash as `\\`, so an escape such as
// `\u{202E}` in the line cannot have come from the payload's text. An empty
// payload prints as {}. Any other payload prints as invalid_payload= followed
// by trace.Sanitize of its bytes. Either way a line never holds a raw line break or
// terminal escape sequence.
//
// The Observer is safe for concurrent use; each event is one Write, so lines
// stay whole. Write errors are ignored; use WriterWithErr to see them.
func Writer(w io.Writer) agentrt.Observer {
	obs, _ := WriterWithErr(w)
	return obs
}

// WriterWithErr is Writer plus a function reporting the first write error. After
// a write fails the Observer writes nothing more: the failed line may be partly
// written, and whatever follows it would not line up.
func WriterWithErr(w io.Writer) (agentrt.Observer, func() error) {
	return newTextSink(w, time.Local)
}

func newTextSink(w io.Writer, loc *time.Location) (agentrt.Observer, func() error) {
	s := &sink{w: w, format: func(e agentrt.Event) []byte { return appendText(nil, e, loc) }}
	return s.observe, s.error
}

// JSONL returns an Observer that writes one JSON object per event to w, one per
// line:
//
//	{"seq":1,"run_id":"…","step_id":"…","at":"<RFC 3339, nanoseconds>","type":"…","payload":{…}}
//
// step_id is left out when empty. The payload is the event's JSON, compacted;
// an empty payload is written as {}. A payload that is not valid JSON is not
// dropped: it is written as a JSON string and "invalid_payload":true is added.
// HTML characters are not escaped.
//
// So that a line is also safe to print on a terminal, every character that
// trace.Sanitize would escape, and every combining mark past the fourth on a base, is
// written as a JSON \u escape. The line decodes to the same values; invalid
// UTF-8 is written as \ufffd, which is what a JSON decoder would read anyway.
//
// The Observer is safe for concurrent use; each event is one Write, so lines
// stay whole. Write errors are ignored; use JSONLWithErr to see them.
func JSONL(w io.Writer) agentrt.Observer {
	obs, _ := JSONLWithErr(w)
	return obs
}

// JSONLWithErr is JSONL plus a function reporting the first write error. After a
// write fails the Observer writes nothing more.
func JSONLWithErr(w io.Writer) (agentrt.Observer, func() error) {
	s := &sink{w: w, format: appendJSONL}
	return s.observe, s.error
}

// sink serializes writes of formatted events to one io.Writer.
type sink struct {
	format func(agentrt.Event) []byte

	mu  sync.Mutex
	w   io.Writer
	err error
}

func (s *sink) observe(e agentrt.Event) {
	// Format outside the lock: observers run on committing goroutines and a
	// large payload should not hold up the others.
	line := s.format(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	n, err := s.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.err = fmt.Errorf("eventlog: writing event %d: %w", e.Seq, err)
	}
}

func (s *sink) error() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func appendText(dst []byte, e agentrt.Event, loc *time.Location) []byte {
	dst = e.At.In(loc).AppendFormat(dst, timeLayout)
	dst = append(dst, "  "...)
	start := len(dst)
	dst = termsafe.Append(dst, string(e.Type), false, true)
	for w := utf8.RuneCount(dst[start:]); w < typeWidth; w++ {
		dst = append(dst, ' ')
	}
	dst = append(dst, "  run="...)
	if e.RunID == "" {
		dst = append(dst, '-')
	} else {
		dst = termsafe.Append(dst, trace.ShortRunID(e.RunID), true, true)
	}
	dst = append(dst, ' ')
	switch {
	case len(e.Payload) == 0:
		dst = append(dst, "{}"...)
	case json.Valid(e.Payload):
		var compact bytes.Buffer
		compact.Grow(len(e.Payload))
		if err := json.Compact(&compact, e.Payload); err != nil {
			// json.Valid said yes; keep the bytes rather than lose them.
			compact.Reset()
			compact.Write(e.Payload)
		}
		dst = termsafe.Append(dst, compact.String(), true, false)
	default:
		dst = append(dst, "invalid_payload="...)
		dst = termsafe.Append(dst, string(e.Payload), true, true)
	}
	return append(dst, '\n')
}

// jsonlRecord is one line of JSONL output.
type jsonlRecord struct {
	Seq            int64             `json:"seq"`
	RunID          string            `json:"run_id"`
	StepID         string            `json:"step_id,omitempty"`
	At             string            `json:"at"`
	Type           agentrt.EventType `json:"type"`
	Payload        any               `json:"payload"`
	InvalidPayload bool              `json:"invalid_payload,omitempty"`
}

func appendJSONL(e agentrt.Event) []byte {
	rec := jsonlRecord{
		Seq:    e.Seq,
		RunID:  e.RunID,
		StepID: e.StepID,
		At:     e.At.Format(time.RFC3339Nano),
		Type:   e.Type,
	}
	switch {
	case len(e.Payload) == 0:
		rec.Payload = json.RawMessage("{}")
	case json.Valid(e.Payload):
		rec.Payload = e.Payload
	default:
		rec.Payload, rec.InvalidPayload = string(e.Payload), true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		// Only a payload the encoder rejects despite json.Valid can get here.
		buf.Reset()
		rec.Payload, rec.InvalidPayload = string(e.Payload), true
		_ = enc.Encode(rec) // a struct of strings always encodes
	}
	line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return append(termsafe.AppendJSON(make([]byte, 0, len(line)+1), line), '\n')
}
