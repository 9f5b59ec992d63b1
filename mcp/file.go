package mcp

import (
	"encoding/json"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/canon"
	"github.com/agentrt/agentrt/internal/files"
)

// FileRule is the JSON form of a Rule in a rules file, keyed by the
// server's tool name. Timeout is a Go duration ("5s").
type FileRule struct {
	SideEffect        agentrt.SideEffect         `json:"side_effect"`
	Timeout           string                     `json:"timeout,omitempty"`
	Terminal          bool                       `json:"terminal,omitempty"`
	Description       string                     `json:"description,omitempty"`
	Deny              []string                   `json:"deny,omitempty"`
	Fixed             map[string]json.RawMessage `json:"fixed,omitempty"`
	Rename            string                     `json:"rename,omitempty"`
	AllowHintMismatch bool                       `json:"allow_hint_mismatch,omitempty"`
}

// ReadRules reads a rules file through ReadOwned: a JSON object of
// FileRules. A repeated key or an unknown field is refused, because whoever
// writes the file chooses how every tool is classified. Errors name the
// path.
func ReadRules(path string) (Rules, error) {
	b, err := ReadOwned(path)
	if err != nil {
		return nil, err
	}
	var fr map[string]FileRule
	if err := decodeStrict(b, &fr); err != nil {
		return nil, fmt.Errorf("mcp: rules %s: %w", path, err)
	}
	rules := Rules{}
	for name, r := range fr {
		rule := Rule{SideEffect: r.SideEffect, Terminal: r.Terminal, Description: r.Description,
			Deny: r.Deny, Fixed: r.Fixed, Rename: r.Rename, AllowHintMismatch: r.AllowHintMismatch}
		if r.Timeout != "" {
			d, err := time.ParseDuration(r.Timeout)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("mcp: rules %s: tool %q: timeout %q is not a positive duration", path, name, r.Timeout)
			}
			rule.Timeout = d
		}
		if !rule.SideEffect.Valid() {
			return nil, fmt.Errorf("mcp: rules %s: tool %q: side_effect must be read_only, local_mutation, remote_mutation or destructive, got %q", path, name, r.SideEffect)
		}
		rules[name] = rule
	}
	return rules, nil
}

// ReadManifest reads a manifest written by WriteManifest (or any JSON
// encoding of a Manifest) through ReadOwned.
func ReadManifest(path string) (*Manifest, error) {
	b, err := ReadOwned(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := decodeStrict(b, &m); err != nil {
		return nil, fmt.Errorf("mcp: manifest %s: %w", path, err)
	}
	return &m, nil
}

// WriteManifest writes m as indented JSON, owner-only (0600), replacing
// path through files.WriteAtomic: synced before it is renamed into place,
// so a crash leaves the old pin or the new one, never an empty file.
func WriteManifest(path string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(b, '\n'), 0o600)
}

// decodeStrict refuses JSON the core would refuse (a repeated key among
// them, so no reader can see a different file), unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
	if err := agentrt.CheckJSON(b); err != nil {
		return err
	}
	return canon.DecodeStrict(b, v)
}
