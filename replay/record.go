package replay

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/files"
)

// maxRecordingBytes bounds a recording the Replayer reads.
const maxRecordingBytes = 256 << 20

// ErrNotRecorded says the Replayer holds no recording for a request: it was
// never made, or made fewer times than it is now asked.
var ErrNotRecorded = errors.New("replay: the request was not recorded")

// NotRecordedError names the request's key and how often it was recorded
// and requested. It matches ErrNotRecorded.
type NotRecordedError struct {
	Key       string
	Recorded  int
	Requested int
}

func (e *NotRecordedError) Error() string {
	k := e.Key
	if len(k) > 12 {
		k = k[:12]
	}
	if e.Recorded == 0 {
		return fmt.Sprintf("replay: request %s was not recorded", k)
	}
	return fmt.Sprintf("replay: request %s was recorded %d time(s) and requested %d; the session has diverged", k, e.Recorded, e.Requested)
}

// Is matches ErrNotRecorded.
func (e *NotRecordedError) Is(target error) bool { return target == ErrNotRecorded }

// ErrUnsafeDir says a recording directory others can write was refused:
// anyone who can write it can plant a response the Replayer would serve.
var ErrUnsafeDir = errors.New("replay: the recording directory is writable by group or others")

// record is one exchange as stored. The provider's raw bytes and the tool
// arguments are stored as JSON strings (base64 when not UTF-8), so they come
// back byte for byte: an encoder never re-indents, compacts or escapes them.
type record struct {
	Model     string          `json:"model"`
	Request   json.RawMessage `json:"request"`
	Response  storedResponse  `json:"response"`
	RawBytes  *string         `json:"raw_bytes,omitempty"`
	RawBase64 string          `json:"raw_base64,omitempty"`
}

type storedResponse struct {
	Text       string          `json:"text,omitempty"`
	ToolUses   []storedToolUse `json:"tool_uses,omitempty"`
	StopReason string          `json:"stop_reason"`
	Usage      agentrt.Usage   `json:"usage"`
}

type storedToolUse struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Args       string `json:"args"`
	ArgsBase64 bool   `json:"args_base64,omitempty"`
}

// bytesField stores b as a string, or as base64 when it is not UTF-8.
func bytesField(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

func encodeRecord(model string, req agentrt.ModelRequest, resp agentrt.ModelResponse) ([]byte, error) {
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	rec := record{Model: model, Request: reqJSON, Response: storedResponse{Text: resp.Text, StopReason: resp.StopReason, Usage: resp.Usage}}
	for _, tu := range resp.ToolUses {
		args, b64 := bytesField(tu.Args)
		rec.Response.ToolUses = append(rec.Response.ToolUses, storedToolUse{ID: tu.ID, Name: tu.Name, Args: args, ArgsBase64: b64})
	}
	if resp.Raw != nil {
		raw, b64 := bytesField(resp.Raw)
		if b64 {
			rec.RawBase64 = raw
		} else {
			rec.RawBytes = &raw
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeRecord(data []byte) (agentrt.ModelResponse, error) {
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return agentrt.ModelResponse{}, err
	}
	resp := agentrt.ModelResponse{Text: rec.Response.Text, StopReason: rec.Response.StopReason, Usage: rec.Response.Usage}
	for _, tu := range rec.Response.ToolUses {
		args := []byte(tu.Args)
		if tu.ArgsBase64 {
			var err error
			if args, err = base64.StdEncoding.DecodeString(tu.Args); err != nil {
				return agentrt.ModelResponse{}, fmt.Errorf("tool use %q: arguments are not base64", tu.ID)
			}
		}
		resp.ToolUses = append(resp.ToolUses, agentrt.ToolUse{ID: tu.ID, Name: tu.Name, Args: args})
	}
	switch {
	case rec.RawBytes != nil:
		resp.Raw = json.RawMessage(*rec.RawBytes)
	case rec.RawBase64 != "":
		raw, err := base64.StdEncoding.DecodeString(rec.RawBase64)
		if err != nil {
			return agentrt.ModelResponse{}, errors.New("raw_base64 is not base64")
		}
		resp.Raw = raw
	}
	return resp, nil
}

// fileName is where the n-th exchange (from 1) of a key is stored.
func fileName(key string, n int) string {
	if n == 1 {
		return key + ".json"
	}
	return key + "." + strconv.Itoa(n) + ".json"
}

// Recorder is a model that passes each call to Inner and stores every
// successful exchange in Dir: the first of a key as <key>.json, repeats of
// the identical request as <key>.2.json, <key>.3.json, and so on. The first
// exchange of a key in a Recorder's life deletes that key's repeats left by
// an earlier session. It is safe for concurrent use.
type Recorder struct {
	// Inner is the model recorded. Its Name keys the recordings.
	Inner agentrt.Model
	// Dir holds the recordings. It is created 0700 when missing, and refused
	// when group or others can write it.
	Dir string

	mu   sync.Mutex
	seen map[string]int
}

// Name is Inner's name.
func (r *Recorder) Name() string {
	if r.Inner == nil {
		return ""
	}
	return r.Inner.Name()
}

// Generate calls Inner and records a successful exchange. A request that has
// no Key, or a Dir that cannot be used, is refused before Inner is called. A reply that cannot be recorded
// was still served, so it comes back as a ServedError charging its usage.
func (r *Recorder) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	if r.Inner == nil {
		return agentrt.ModelResponse{}, errors.New("replay: Recorder.Inner is nil")
	}
	key, err := Key(r.Inner.Name(), req)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	// A directory that cannot hold the recording is found before a call is
	// paid for.
	if err := ownerDir(r.Dir); err != nil {
		return agentrt.ModelResponse{}, err
	}
	resp, err := r.Inner.Generate(ctx, req)
	if err != nil {
		return resp, err
	}
	if err := r.store(key, req, resp); err != nil {
		return agentrt.ModelResponse{}, &agentrt.ServedError{Usage: resp.Usage, Err: err}
	}
	return resp, nil
}

func (r *Recorder) store(key string, req agentrt.ModelRequest, resp agentrt.ModelResponse) error {
	data, err := encodeRecord(r.Inner.Name(), req, resp)
	if err != nil {
		return fmt.Errorf("replay: encoding the recording: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ownerDir(r.Dir); err != nil {
		return err
	}
	n := r.seen[key] + 1
	if n == 1 {
		if err := removeRepeats(r.Dir, key); err != nil {
			return err
		}
	}
	if err := writeOwnerOnly(r.Dir, fileName(key, n), data); err != nil {
		return err
	}
	if r.seen == nil {
		r.seen = map[string]int{}
	}
	r.seen[key] = n
	return nil
}

// ownerDir creates dir 0700 when missing and refuses one that group or
// others can write.
func ownerDir(dir string) error {
	if dir == "" {
		return errors.New("replay: Recorder.Dir is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("replay: creating the recording directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("replay: reading the recording directory: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %04o; use chmod 700", ErrUnsafeDir, dir, fi.Mode().Perm())
	}
	return nil
}

var repeatName = regexp.MustCompile(`^[0-9a-f]{64}\.([0-9]+)\.json$`)

// removeRepeats deletes <key>.<n>.json files left by an earlier session.
func removeRepeats(dir, key string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("replay: reading the recording directory: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if len(name) > len(key) && name[:len(key)] == key && repeatName.MatchString(name) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("replay: removing a stale recording: %w", err)
			}
		}
	}
	return nil
}

// writeOwnerOnly writes data to dir/name through files.WriteAtomic: a
// temporary file this process creates itself (O_EXCL under a random name,
// so nothing planted in advance is written through), mode 0600, synced,
// then renamed over the target, which replaces rather than follows a link
// there; the directory is synced so the rename survives a crash.
func writeOwnerOnly(dir, name string, data []byte) error {
	if err := files.WriteAtomic(filepath.Join(dir, name), data, 0o600); err != nil {
		return fmt.Errorf("replay: writing the recording: %w", err)
	}
	return nil
}

// Replayer is a model that serves a Recorder's recordings: the n-th call
// with a request gets the n-th recording of it. A request never recorded, or
// made more times than recorded, is ErrNotRecorded. It is safe for
// concurrent use.
type Replayer struct {
	// ModelName must be the recorded model's name; it keys the recordings.
	ModelName string
	// Dir holds the recordings.
	Dir string

	mu     sync.Mutex
	served map[string]int
}

// Name is ModelName.
func (r *Replayer) Name() string { return r.ModelName }

// Generate serves the next recording of req.
func (r *Replayer) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return agentrt.ModelResponse{}, err
	}
	key, err := Key(r.ModelName, req)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	r.mu.Lock()
	if r.served == nil {
		r.served = map[string]int{}
	}
	r.served[key]++
	n := r.served[key]
	r.mu.Unlock()
	data, err := readBounded(filepath.Join(r.Dir, fileName(key, n)))
	if errors.Is(err, os.ErrNotExist) {
		recorded := 0
		for recorded < n-1 {
			if _, err := os.Lstat(filepath.Join(r.Dir, fileName(key, recorded+1))); err != nil {
				break
			}
			recorded++
		}
		return agentrt.ModelResponse{}, &NotRecordedError{Key: key, Recorded: recorded, Requested: n}
	}
	if err != nil {
		return agentrt.ModelResponse{}, fmt.Errorf("replay: reading the recording: %w", err)
	}
	resp, err := decodeRecord(data)
	if err != nil {
		return agentrt.ModelResponse{}, fmt.Errorf("replay: recording %s is unreadable: %w", fileName(key, n), err)
	}
	return resp, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordingBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRecordingBytes {
		return nil, fmt.Errorf("the recording is larger than %d bytes", maxRecordingBytes)
	}
	return data, nil
}

var (
	_ agentrt.Model = (*Scripted)(nil)
	_ agentrt.Model = (*Recorder)(nil)
	_ agentrt.Model = (*Replayer)(nil)
)
