package agentrt_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/replay"
	"github.com/agentrt/agentrt/scripted"
)

// A negative model setting is refused by NewDriver, naming the field.
func TestNewDriver_NegativeModelSettingsAreRefused(t *testing.T) {
	st := openAt(t, filepath.Join(t.TempDir(), "a.db"))
	defer st.Close()
	for field, mc := range map[string]agentrt.ModelConfig{
		"CallTimeout":   {CallTimeout: -time.Second},
		"MaxRetries":    {MaxRetries: -1},
		"Backoff":       {Backoff: -time.Millisecond},
		"MaxRetryAfter": {MaxRetryAfter: -time.Minute},
	} {
		mc.Model = &replay.Scripted{}
		_, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Model: &mc}, Agent: &scripted.Agent{}})
		if !errors.Is(err, agentrt.ErrInvalidConfig) || !strings.Contains(err.Error(), "Config.Model."+field) {
			t.Errorf("%s: %v, want ErrInvalidConfig naming the field", field, err)
		}
	}
}

// Errors built without a cause still print rather than panic.
func TestModelErrors_PrintWithoutACause(t *testing.T) {
	for _, err := range []error{&agentrt.ServedError{}, &agentrt.TransientError{}} {
		if msg := err.Error(); !strings.Contains(msg, "no cause") {
			t.Errorf("%T printed %q", err, msg)
		}
	}
}
