package testhook_test

import (
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testhook"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// A hook installed over another is taken out by its restore, which puts the
// earlier one back; with none installed, a crash point does nothing.
func TestSet_RestorePutsBackTheEarlierHook(t *testing.T) {
	var got []string
	testhook.Crash("p", "r", 0) // nothing installed: nothing happens
	restoreA := testhook.Set(func(p, id string, i int) { got = append(got, "a:"+p) })
	restoreB := testhook.Set(func(p, id string, i int) { got = append(got, "b:"+p) })
	testhook.Crash("one", "r", 0)
	restoreB()
	testhook.Crash("two", "r", 0)
	restoreA()
	testhook.Crash("three", "r", 0)
	if s := strings.Join(got, ","); s != "b:one,a:two" {
		t.Fatalf("hooks called %q, want b:one,a:two", s)
	}
}

// The lease clock can be set on a Driver or a Gate, which package agentrt
// registered in its init, and on nothing else: a mistaken target panics
// rather than leaving the real clock in place unnoticed.
func TestSetWallClock_OnlyADriverOrAGate(t *testing.T) {
	st := openStore(t)
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Policy: agentrt.DefaultPolicy(),
		},
		Agent: agentrt.AgentFunc(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy()}})
	if err != nil {
		t.Fatal(err)
	}
	wall := func() time.Time { return time.Unix(0, 0) }
	testhook.SetWallClock(d, wall)
	testhook.SetWallClock(g, wall)
	defer func() {
		if recover() == nil {
			t.Fatal("SetWallClock on a *Run did not panic")
		}
	}()
	testhook.SetWallClock(&agentrt.Run{}, wall)
}

// openStore is a fresh runs database, closed when t ends.
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, _ := testrig.DB(t)
	return st
}
