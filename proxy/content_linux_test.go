//go:build linux

package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os/exec"
	"regexp"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host calls a server tool that returns an image and a resource link
// through the proxy: the blocks reach the host as the server sent them,
// the image's bytes equal, and the real agentrt show lists the recorded
// blocks by type, size and hash. Before, only text and structured content
// were recorded and the host got placeholders.
func TestProxy_ImageAndResourceLinkReachTheHostAsSent(t *testing.T) {
	sm := newSmall(t, "s", nil, nil, nil)
	h := smallHarness(t, sm.entry(nil))
	res := h.call("s_shot", `{}`)
	mustf(t, !res.IsError && len(res.Content) == 3, "content: %+v", res.Content)
	tc, ok := res.Content[0].(*sdk.TextContent)
	mustf(t, ok && tc.Text == "the screen", "text block: %+v", res.Content[0])
	img, ok := res.Content[1].(*sdk.ImageContent)
	mustf(t, ok && img.MIMEType == "image/png" && bytes.Equal(img.Data, shotPNG), "image block: %T, %d bytes", res.Content[1], len(img.Data))
	link, ok := res.Content[2].(*sdk.ResourceLink)
	mustf(t, ok && link.URI == "file:///shots/1.png" && link.Name == "1.png" && link.Size != nil && *link.Size == int64(len(shotPNG)), "link block: %+v", res.Content[2])

	runs, err := h.p.Store().ListRuns(context.Background())
	mustf(t, err == nil && len(runs) == 1, "runs: %v %v", runs, err)
	_, agentrtBin := binaries(t)
	out, err := exec.Command(agentrtBin, "-db", h.cfg.Database, "show", runs[0].ID).CombinedOutput()
	mustf(t, err == nil, "agentrt show: %v\n%s", err, out)
	sum := sha256.Sum256(shotPNG)
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^0\s+0\s+text\s+-\s+10\s+[0-9a-f]{64}\s+-$`),
		regexp.MustCompile(`(?m)^0\s+1\s+image\s+image/png\s+` + fmt.Sprint(len(shotPNG)) + `\s+` + hex.EncodeToString(sum[:]) + `\s+-$`),
		regexp.MustCompile(`(?m)^0\s+2\s+resource_link\s+image/png\s+` + fmt.Sprint(len(shotPNG)) + `\s+[0-9a-f]{64}\s+\S+$`),
	}
	// The URI column: a text or image block has none (-); the link's URI
	// is shown when its step's result was read whole, else -.
	for _, re := range want {
		mustf(t, re.Match(out), "agentrt show does not list %s:\n%s", re, out)
	}
}
