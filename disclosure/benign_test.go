package disclosure_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
)

// holdsTestKeys are the repository's files that hold secrets on purpose
// (this module's own corpus, keys and tokens other tests plant). They are
// left out of the benign corpus here, in the test, never in the product.
var holdsTestKeys = []string{"disclosure/", "testdata/", "node_modules/"}

// The repository's own Go source and docs, read as a tool would return
// them, are a benign corpus: the share of files with any finding is the
// false-positive rate, reported by rule. It must stay under 10%.
func TestRules_BenignCorpusFalsePositiveRate(t *testing.T) {
	r := rules(t, disclosure.Default())
	root := ".."
	var files, flagged int
	byRule := map[string]int{}
	var examples []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			for _, skip := range holdsTestKeys {
				if strings.HasPrefix(rel+"/", skip) || strings.Contains(rel+"/", "/"+skip) {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		content, _ := json.Marshal(map[string]string{"path": rel, "text": string(b)})
		out, err := r.Disclose(context.Background(), agentrt.DisclosureInput{Tool: agentrt.ToolSpec{Name: "read_file"},
			Kind: agentrt.ObsToolResult, Content: content})
		if err != nil {
			return err
		}
		files++
		if len(out.Findings) > 0 {
			flagged++
			for _, f := range out.Findings {
				byRule[f.Rule]++
			}
			examples = append(examples, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 200 {
		t.Fatalf("only %d files read: the walk is not looking at the repository", files)
	}
	rate := float64(flagged) / float64(files)
	var rules []string
	for k, v := range byRule {
		rules = append(rules, k+"="+itoa(v))
	}
	sort.Strings(rules)
	sort.Strings(examples)
	if len(examples) > 15 {
		examples = examples[:15]
	}
	t.Logf("benign corpus: %d of %d files flagged (%.1f%%); findings by rule: %s; e.g. %v", flagged, files, 100*rate, strings.Join(rules, " "), examples)
	if rate > 0.10 {
		t.Errorf("false-positive rate %.1f%% is over 10%%", 100*rate)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
