package house_test

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/house"
)

// readLayers reads testdata/root-layers.txt: "file layer" a line.
func readLayers(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "root-layers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layers := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, layer, ok := strings.Cut(line, " ")
		switch layer {
		case house.Vocabulary, house.Engine, house.Operator:
		default:
			t.Fatalf("internal/house/testdata/root-layers.txt:%d: %q is not \"file vocabulary|engine|operator\"", n, line)
		}
		if !ok || layers[file] != "" {
			t.Fatalf("internal/house/testdata/root-layers.txt:%d: %s is classified twice", n, file)
		}
		layers[file] = layer
	}
	return layers
}

// Every file of the root package has exactly one layer in
// testdata/root-layers.txt, and the table names no file that is gone.
func TestHouse_EveryRootFileHasALayer(t *testing.T) {
	layers := readLayers(t)
	files := tree.RootFiles()
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if layers[name] == "" {
			t.Errorf("the root file %s has no layer: add the line %q (or engine, or operator) to internal/house/testdata/root-layers.txt", name, name+" vocabulary")
		}
	}
	for name := range layers {
		if files[name] == nil {
			t.Errorf("internal/house/testdata/root-layers.txt classifies %s, which the root package no longer holds: remove its line", name)
		}
	}
}

// A vocabulary file of the root package names no identifier an engine or
// operator file declares (the floor holds), except the references
// testdata/allow/layering.txt lists.
func TestHouse_RootVocabularyNamesNothingAboveIt(t *testing.T) {
	layers := readLayers(t)
	holdAllowlist(t, "layering.txt", tree.LayerViolations(layers), func(k string) string {
		file, name, _ := strings.Cut(k, " ")
		return "the vocabulary file " + file + " names " + strings.TrimPrefix(name, ".") +
			", declared in an engine or operator file: move the declaration down to the vocabulary, or the use up"
	})
}
