package canon_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/canon"
)

// benchDoc looks like a tool call: a few keys out of order, nested arguments,
// text with characters that need escaping.
var benchDoc = []byte(`{
  "tool": "write_file",
  "args": {"path": "/tmp/out/report.html", "mode": 420, "overwrite": false,
    "content": "<html><body><h1>Quarterly report</h1><p>Revenue & costs: 1.5e6 \u2014 up 12%</p></body></html>\n",
    "tags": ["finance", "q3", "draft"], "limits": {"max_bytes": 1048576, "timeout": 30.5}},
  "step_id": "4f1c2b7a9d3e4c5b8a6f0e1d2c3b4a59",
  "run_id": "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
  "meta": {"attempt": 1, "origin": "model", "note": "naïve café 😀"}
}`)

// BenchmarkCanon measures each reading of benchDoc: its canonical form,
// its hash, and the check alone.
func BenchmarkCanon(b *testing.B) {
	for _, c := range []struct {
		name string
		read func([]byte) error
	}{
		{"Canonical", func(d []byte) error { _, err := canon.Canonical(d); return err }},
		{"Hash", func(d []byte) error { _, err := canon.Hash(d); return err }},
		{"Check", canon.Check},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(benchDoc)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.read(benchDoc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
