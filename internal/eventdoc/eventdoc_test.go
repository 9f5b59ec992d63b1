package eventdoc

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt"
)

var update = flag.Bool("update", false, "rewrite docs/events.md and docs/events/*.schema.json")

// docs/events.md and the schemas are what the catalogue's types generate:
// a field added, renamed, retagged or redocumented without regenerating
// fails here, and so does a schema file for a type no longer written.
func TestEvents_DocsAndSchemaMatchTheTypes(t *testing.T) {
	d, err := ReadDocs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join("..", "..", "docs")
	if *update {
		if err := d.Write(docs); err != nil {
			t.Fatal(err)
		}
	}
	files := d.Files()
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(docs, name))
		if err != nil {
			t.Errorf("%s: %v (regenerate with -update)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s is not what the types generate (regenerate with -update)", name)
		}
	}
	onDisk, _ := filepath.Glob(filepath.Join(docs, "events", "*.schema.json"))
	if len(onDisk) != len(files)-1 {
		t.Errorf("%d schema files in docs/events, the catalogue has %d types", len(onDisk), len(files)-1)
	}
}

// Each schema says which fields are content: the ones tagged so in the
// types, and every field inside one, and nothing else.
func TestEvents_SchemasMarkContentFields(t *testing.T) {
	d, err := ReadDocs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want := map[agentrt.EventType][]string{
		agentrt.EventToolStarted:     {"args"},
		agentrt.EventStepDecided:     {"call_id", "tool", "args", "reason", "result", "message", "invalid_args", "invalid_result"},
		agentrt.EventApprovalRequest: {"capability", "presentation", "reason"},
		agentrt.EventRunCreated:      {"goal"},
		agentrt.EventStepStarted:     nil,
	}
	for _, k := range agentrt.EventCatalogue() {
		w, ok := want[k.Type]
		if !ok {
			continue
		}
		b := d.SchemaJSON(k)
		var s struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for name, p := range s.Properties {
			if p["x-agentrt-content"] == true {
				got[name] = true
			}
		}
		if len(got) != len(w) {
			t.Errorf("%s: content fields %v, want %v", k.Type, got, w)
		}
		for _, n := range w {
			if !got[n] {
				t.Errorf("%s: %s is not marked content", k.Type, n)
			}
		}
	}
}
