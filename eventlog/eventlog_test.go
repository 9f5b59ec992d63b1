package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/termsafe"
	"github.com/agentrt/agentrt/internal/termsafe/termsafetest"
	"github.com/agentrt/agentrt/internal/testrig"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// zone is a fixed zone so golden output does not depend on the machine.
var zone = time.FixedZone("IST", 5*3600+30*60)

// at is a fixed instant with a fractional second.
var at = time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)

// adversarial are events whose run ids, types and payloads were chosen by
// someone hostile to the operator reading the trace.
var adversarial = []agentrt.Event{
	{Seq: 1, RunID: "01HZX4Q7RUNAAAAAAAA", At: at, Type: agentrt.EventRunCreated,
		Payload: json.RawMessage(`{"agent":"demo","input":"hello"}`)},
	{Seq: 2, RunID: "01HZX4Q7RUNAAAAAAAA", StepID: "step-1", At: at.Add(time.Millisecond), Type: agentrt.EventStepStarted},
	// A JSON-escaped ESC is just text; the raw one makes the payload invalid.
	{Seq: 3, RunID: "01HZX4Q7RUNAAAAAAAA", StepID: "step-1", At: at, Type: agentrt.EventToolFinished,
		Payload: json.RawMessage(`{"stdout":"\u001b[2J\u001b[Hok"}`)},
	{Seq: 4, RunID: "01HZX4Q7RUNAAAAAAAA", StepID: "step-1", At: at, Type: agentrt.EventToolFinished,
		Payload: json.RawMessage("\x1b[2J\x1b[Hyou have been pwned\r\n\x1b]0;title\x07")},
	{Seq: 5, RunID: "01HZX4Q7RUNAAAAAAAA", StepID: "step-1", At: at, Type: agentrt.EventStepDecided,
		Payload: json.RawMessage("{\"tool\":\"delete\",\"args\":{\"path\":\"/home/\u202Etxt.exe\u2066 // safe\u2069\"}}")},
	{Seq: 6, RunID: "01HZX4Q7RUNAAAAAAAA", StepID: "step-1", At: at, Type: agentrt.EventStepDecided,
		Payload: json.RawMessage(`{"name":"Z` + strings.Repeat("\u0336", 40) + `algo"}`)},
	// The run id and type are hostile too.
	{Seq: 7, RunID: "r\nFAKE\x1b[31m", StepID: "s\u202E1", At: at, Type: "step.policy\x1b[8m",
		Payload: json.RawMessage(`{}`)},
	// JSON escapes, a typed escape, HTML, a raw line separator, a raw invalid
	// byte inside a string, and pretty-printing.
	{Seq: 8, RunID: "01HZX4Q7RUNAAAAAAAA", At: at, Type: agentrt.EventModelCompleted,
		Payload: json.RawMessage("{\n  \"cmd\": \"echo \\\"a\\\\b\\\"\",\n  \"note\": \"\\\\u{202E} is typed\",\n  \"html\": \"<b>&amp;</b>\",\n  \"sep\": \"a\u2028b\",\n  \"bad\": \"\xff\"\n}")},
	{Seq: 9, RunID: "01HZX4Q7RUNAAAAAAAA", At: at, Type: agentrt.EventModelCompleted,
		Payload: json.RawMessage(`{"text":"family 👨` + "\u200D" + `👩 flag 🇺🇦 ok ✔️"}`)},
	{Seq: 10, RunID: "", At: at, Type: "a.type.longer.than.twenty.two.columns",
		Payload: json.RawMessage(`[1,2,3]`)},
}

// observe feeds events to an Observer made by mk and returns what it wrote.
func observe(t *testing.T, mk func(w *bytes.Buffer) (agentrt.Observer, func() error), events []agentrt.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	obs, errf := mk(&buf)
	for _, e := range events {
		obs(e)
	}
	if err := errf(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func textIn(loc *time.Location) func(w *bytes.Buffer) (agentrt.Observer, func() error) {
	return func(w *bytes.Buffer) (agentrt.Observer, func() error) { return newTextSink(w, loc) }
}

func jsonl(w *bytes.Buffer) (agentrt.Observer, func() error) { return JSONLWithErr(w) }

// checkTerminalSafe fails if out holds anything a terminal would act on or
// hide, other than the newline ending each line.
func checkTerminalSafe(t *testing.T, out []byte, lines int) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Fatal("output is not valid UTF-8")
	}
	if n := bytes.Count(out, []byte("\n")); n != lines {
		t.Fatalf("output has %d newlines, want %d", n, lines)
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatal("output does not end with a newline")
	}
	marks := 0
	for i, r := range string(out) {
		if r == '\n' {
			marks = 0
			continue
		}
		if why := termsafetest.Forbidden(r); why != "" {
			t.Fatalf("output keeps U+%04X (%s) at byte %d", r, why, i)
		}
		if unicode.IsMark(r) {
			if marks++; marks > termsafe.MaxMarks {
				t.Fatalf("output stacks %d marks at byte %d", marks, i)
			}
		} else {
			marks = 0
		}
	}
}

// Every adversarial event prints as one sanitized line, as reviewed in the
// golden file.
func TestWriter_GoldenAdversarialPayloads(t *testing.T) {
	out := observe(t, textIn(zone), adversarial)
	checkTerminalSafe(t, out, len(adversarial))
	testrig.Golden(t, filepath.Join("testdata", "writer.golden"), out, *update)
}

// Every adversarial event is one JSON object on one line, as reviewed in the
// golden file.
func TestJSONL_GoldenAdversarialPayloads(t *testing.T) {
	out := observe(t, jsonl, adversarial)
	checkTerminalSafe(t, out, len(adversarial))
	testrig.Golden(t, filepath.Join("testdata", "jsonl.golden"), out, *update)
}

// One ordinary event: time in the given zone, two spaces, the type padded to
// 22, two spaces, the short run id, the payload.
func TestWriter_AlignedLine(t *testing.T) {
	out := observe(t, textIn(zone), adversarial[:2])
	want := "2026-03-14 14:56:53.589 +0530  run.created             run=01HZX4Q7RUNAAAAA {\"agent\":\"demo\",\"input\":\"hello\"}\n" +
		"2026-03-14 14:56:53.590 +0530  step.started            run=01HZX4Q7RUNAAAAA {}\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if a, b := strings.Index(lines[0], "run="), strings.Index(lines[1], "run="); a != b {
		t.Errorf("run= at columns %d and %d", a, b)
	}
}

// The exported Writer prints the time in the local zone.
func TestWriter_UsesLocalTime(t *testing.T) {
	var buf bytes.Buffer
	Writer(&buf)(adversarial[0])
	want := at.Local().Format("2006-01-02 15:04:05.000 -0700") + "  run.created"
	if !strings.HasPrefix(buf.String(), want) {
		t.Fatalf("got %q, want prefix %q", buf.String(), want)
	}
}

// A megabyte of hostile text is written whole, on one line, with nothing a
// terminal would act on.
func TestWriter_MegabytePayloadWrittenWholeAndSanitized(t *testing.T) {
	chunk := "\x1b[2J\r\n\u202E\u200B\x00\u0085" + "Z" + strings.Repeat("\u0336", 9) + "\\"
	body := strings.Repeat(chunk, (1<<20)/len(chunk)+1)
	valid, _ := json.Marshal(map[string]string{"blob": body + "END"})
	events := []agentrt.Event{
		{Seq: 1, RunID: "run", At: at, Type: agentrt.EventToolFinished, Payload: json.RawMessage(body + "END")},
		{Seq: 2, RunID: "run", At: at, Type: agentrt.EventToolFinished, Payload: valid},
	}
	for _, mk := range []struct {
		name string
		f    func(w *bytes.Buffer) (agentrt.Observer, func() error)
	}{{"Writer", textIn(zone)}, {"JSONL", jsonl}} {
		t.Run(mk.name, func(t *testing.T) {
			out := observe(t, mk.f, events)
			checkTerminalSafe(t, out, 2)
			for i, line := range strings.SplitAfter(strings.TrimSuffix(string(out), "\n"), "\n") {
				if len(line) < 1<<20 {
					t.Errorf("line %d is only %d bytes", i+1, len(line))
				}
				if !strings.Contains(line, "END") {
					t.Errorf("line %d lost its end", i+1)
				}
			}
		})
	}
}

// Each event is one object per line with the event's fields; step_id is left
// out when empty and an empty payload becomes {}.
func TestJSONL_OneObjectPerEvent(t *testing.T) {
	out := observe(t, jsonl, adversarial[:2])
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), out)
	}
	want := []string{
		`{"seq":1,"run_id":"01HZX4Q7RUNAAAAAAAA","at":"2026-03-14T09:26:53.589793238Z","type":"run.created","payload":{"agent":"demo","input":"hello"}}`,
		`{"seq":2,"run_id":"01HZX4Q7RUNAAAAAAAA","step_id":"step-1","at":"2026-03-14T09:26:53.590793238Z","type":"step.started","payload":{}}`,
	}
	for i, line := range lines {
		if line != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, line, want[i])
		}
		var rec struct {
			Seq    int64
			RunID  string `json:"run_id"`
			StepID string `json:"step_id"`
			At     time.Time
			Type   agentrt.EventType
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		e := adversarial[i]
		if rec.Seq != e.Seq || rec.RunID != e.RunID || rec.StepID != e.StepID || !rec.At.Equal(e.At) || rec.Type != e.Type {
			t.Errorf("line %d decodes to %+v, want the fields of %+v", i+1, rec, e)
		}
	}
}

// A payload that is not JSON is kept as a string and flagged, not dropped.
func TestJSONL_InvalidPayloadIsEmittedNotDropped(t *testing.T) {
	raw := "not json \x1b[2J\n{"
	out := observe(t, jsonl, []agentrt.Event{{Seq: 4, RunID: "r", At: at, Type: "x", Payload: json.RawMessage(raw)}})
	var rec map[string]any
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if rec["payload"] != raw || rec["invalid_payload"] != true {
		t.Fatalf("payload %q invalid_payload %v, want %q true", rec["payload"], rec["invalid_payload"], raw)
	}
	valid := observe(t, jsonl, adversarial[:1])
	if bytes.Contains(valid, []byte("invalid_payload")) {
		t.Errorf("a valid payload is flagged: %s", valid)
	}
}

// Escaping for the terminal does not change what the line decodes to.
func TestJSONL_LineIsTerminalSafeAndDecodesToTheSameValues(t *testing.T) {
	out := observe(t, jsonl, adversarial)
	for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		e := adversarial[i]
		var rec struct {
			RunID   string          `json:"run_id"`
			StepID  string          `json:"step_id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if rec.RunID != e.RunID || rec.StepID != e.StepID || rec.Type != string(e.Type) {
			t.Errorf("line %d: ids or type changed: %+q", i+1, rec)
		}
		var got, want any
		if err := json.Unmarshal(rec.Payload, &got); err != nil {
			t.Fatal(err)
		}
		switch {
		case len(e.Payload) == 0:
			want = map[string]any{}
		case json.Valid(e.Payload):
			if err := json.Unmarshal(e.Payload, &want); err != nil {
				t.Fatal(err)
			}
		default:
			want = string(e.Payload)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d: payload decodes to %+q, want %+q", i+1, got, want)
		}
	}
	if !bytes.Contains(out, []byte(`"<b>&amp;</b>"`)) {
		t.Error("HTML characters were escaped")
	}
}

// failingWriter accepts ok writes, then fails every write with its own error.
type failingWriter struct {
	ok     int
	writes int
	buf    bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.ok {
		return 0, fmt.Errorf("write %d: %w", w.writes, errBroken)
	}
	return w.buf.Write(p)
}

var errBroken = errors.New("broken pipe")

func checkSurfacesFirstWriteError(t *testing.T, mk func(*failingWriter) (agentrt.Observer, func() error)) {
	w := &failingWriter{ok: 1}
	obs, errf := mk(w)
	obs(adversarial[0])
	if err := errf(); err != nil {
		t.Fatalf("error %v before any failure", err)
	}
	obs(adversarial[1])
	obs(adversarial[2])
	err := errf()
	if !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "write 2:") {
		t.Fatalf("got %v, want the first failure, write 2", err)
	}
	if w.writes != 2 {
		t.Errorf("writer called %d times, want no write after the failure", w.writes)
	}
	if n := strings.Count(w.buf.String(), "\n"); n != 1 {
		t.Errorf("%d lines written, want 1", n)
	}
}

// A failed write is reported, it is the first one, and nothing is written after.
func TestWriterWithErr_SurfacesTheFirstWriteError(t *testing.T) {
	checkSurfacesFirstWriteError(t, func(w *failingWriter) (agentrt.Observer, func() error) { return WriterWithErr(w) })
}

// A failed write is reported, it is the first one, and nothing is written after.
func TestJSONLWithErr_SurfacesTheFirstWriteError(t *testing.T) {
	checkSurfacesFirstWriteError(t, func(w *failingWriter) (agentrt.Observer, func() error) { return JSONLWithErr(w) })
}

// shortWriter claims success but writes less.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

// A writer that writes less than asked without saying why is an error too.
func TestWriterWithErr_ShortWriteIsAnError(t *testing.T) {
	obs, errf := WriterWithErr(shortWriter{})
	obs(adversarial[0])
	if err := errf(); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("got %v, want io.ErrShortWrite", err)
	}
}

// exclusiveWriter is not safe for concurrent use and notices when it is used
// that way: Write yields in the middle so that overlapping callers meet.
type exclusiveWriter struct {
	busy    atomic.Int32
	overlap atomic.Bool
	mu      sync.Mutex // keeps the test itself race-free if the observer is not
	buf     bytes.Buffer
}

func (w *exclusiveWriter) Write(p []byte) (int, error) {
	if w.busy.Add(1) != 1 {
		w.overlap.Store(true)
	}
	defer w.busy.Add(-1)
	half := len(p) / 2
	w.mu.Lock()
	w.buf.Write(p[:half])
	w.mu.Unlock()
	runtime.Gosched()
	w.mu.Lock()
	w.buf.Write(p[half:])
	w.mu.Unlock()
	return len(p), nil
}

// Many goroutines share one observer; every line comes out whole.
func TestTrace_ConcurrentEventsStayWhole(t *testing.T) {
	const goroutines, each = 8, 50
	for _, mk := range []struct {
		name  string
		f     func(io.Writer) agentrt.Observer
		check func(string) error
	}{
		{"Writer", func(w io.Writer) agentrt.Observer { return Writer(w) }, func(line string) error {
			if !strings.HasSuffix(line, `{"n":"`+strings.Repeat("x", 200)+`"}`) {
				return errors.New("not a whole text line")
			}
			return nil
		}},
		{"JSONL", func(w io.Writer) agentrt.Observer { return JSONL(w) }, func(line string) error {
			var rec map[string]any
			return json.Unmarshal([]byte(line), &rec)
		}},
	} {
		t.Run(mk.name, func(t *testing.T) {
			w := &exclusiveWriter{}
			obs := mk.f(w)
			payload := json.RawMessage(`{"n":"` + strings.Repeat("x", 200) + `"}`)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						obs(agentrt.Event{Seq: int64(g*each + i), RunID: "run", At: at, Type: agentrt.EventStepStarted, Payload: payload})
					}
				})
			}
			wg.Wait()
			if w.overlap.Load() {
				t.Error("two Writes overlapped")
			}
			lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
			if len(lines) != goroutines*each {
				t.Fatalf("got %d lines, want %d", len(lines), goroutines*each)
			}
			for i, line := range lines {
				if err := mk.check(line); err != nil {
					t.Fatalf("line %d %q: %v", i+1, line, err)
				}
			}
		})
	}
}
