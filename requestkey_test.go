package agentrt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testrig"
)

// A step's request key is a plain hash of its arguments, so it would
// confirm a right guess of them: erasure clears it with the content. Before
// the erasure the key is in the file and finds the step; after it, neither.
func TestErase_RequestKeyGoesWithTheContent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	contentRun(t, path)
	key, err := agentrt.RequestKey("send", json.RawMessage(`{"to":"`+marker+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	found := func() int {
		var all []byte
		for _, b := range testrig.DBFilesByName(t, path) {
			all = append(all, b...)
		}
		return bytes.Count(all, []byte(key))
	}
	st := openAt(t, path)
	defer st.Close()
	if steps, err := st.StepsByRequestKey(ctx, key, 10); err != nil || len(steps) != 1 || found() == 0 {
		t.Fatalf("before erasure: %d steps under the key, %v, %d copies in the files", len(steps), err, found())
	}
	if _, err := agentrt.Erase(ctx, st, "run-1", "dpo", "art. 17"); err != nil {
		t.Fatal(err)
	}
	if steps, err := st.StepsByRequestKey(ctx, key, 10); err != nil || len(steps) != 0 {
		t.Fatalf("after erasure: %d steps under the key, %v", len(steps), err)
	}
	if n := found(); n != 0 {
		t.Fatalf("the key is still in the files %d time(s)", n)
	}
}
