package house

import (
	"strings"
	"testing"
)

// A walk counts the files a call enters in order and each call into a
// file it had already left; it steps over test doubles, reads a
// deferring function's second return as nothing, counts a closure in its
// enclosing function's file, and follows only the entry's goroutine.
func TestWalkCallPath_CountsFilesAndReturnsToAFileAlreadyLeft(t *testing.T) {
	files := map[string]string{
		"m.(*P).handle": "call.go", "m.(*P).settle": "call.go", "m.(*P).now": "proxy.go",
		"m.(*pol).Evaluate": "policy.go", "m/internal/index.(*Ix).Set": "internal/index/index.go",
		"m.(*fake).Update": "harness_test.go",
	}
	trace := strings.Join([]string{
		"> goroutine(7): m.(*P).handle(0x1)",
		"> goroutine(9): m.(*P).now(0x1)", // another goroutine: not this call's
		"> goroutine(7): m.(*P).now(0x1)",
		">> goroutine(7): m.(*P).now => (time.Time{})",
		"> goroutine(7): m.(*pol).Evaluate(0x2)",
		"> goroutine(7): m.(*P).now(0x1)", // back in proxy.go, called: a return
		">> goroutine(7): m.(*P).now => ()",
		"> goroutine(7): m.(*P).now.deferwrap1()", // a closure of proxy.go
		">> goroutine(7): m.(*P).now.deferwrap1 => ()",
		">> goroutine(7): m.(*P).now => ()",       // printed again after the deferred call: nothing
		"> goroutine(7): m.(*fake).Update(0x3)",   // a test double: stepped over
		"> goroutine(7): m.(*P).settle.func1(99)", // call.go, called from policy.go through the double
		">> goroutine(7): m.(*P).settle.func1 => ()",
		">> goroutine(7): m.(*fake).Update => ()",
		">> goroutine(7): m.(*pol).Evaluate => ()",
		"> goroutine(7): m/internal/index.(*Ix).Set(0x4)",
		">> goroutine(7): m/internal/index.(*Ix).Set => ()",
		">> goroutine(7): m.(*P).handle => ()",
		"> goroutine(7): m.(*P).now(0x1)", // after handle returned: not walked
	}, "\n")
	p, err := WalkCallPath(strings.NewReader(trace), files, "m.(*P).handle", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"call.go", "proxy.go", "policy.go", "internal/index/index.go"}
	if strings.Join(p.Files, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", p.Files, want)
	}
	// Calls landing in a file already left: now and now.deferwrap1 from
	// policy.go, settle.func1 through the double. Steps add the returns
	// to a caller: now to call.go, now and its closure and settle.func1
	// to policy.go, Evaluate and Set to call.go. Without the repeated
	// return read as nothing, Evaluate's frame would pop early and the
	// walk would end before index.go.
	if p.Returns != 3 {
		t.Errorf("%d returns on calls, want 3 (%s)", p.Returns, p)
	}
	if p.Steps != 9 {
		t.Errorf("%d steps landing in a file already left, want 9 (%s)", p.Steps, p)
	}
}

// A trace without the asked-for call says how many it holds.
func TestWalkCallPath_MissingCallIsAnError(t *testing.T) {
	_, err := WalkCallPath(strings.NewReader("> goroutine(1): m.f()\n>> goroutine(1): m.f => ()\n"), map[string]string{"m.f": "f.go"}, "m.f", 2)
	if err == nil || !strings.Contains(err.Error(), "holds 1 calls of m.f, not 2") {
		t.Fatalf("err %v", err)
	}
}
