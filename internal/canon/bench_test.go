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

func BenchmarkCanonical(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.Canonical(benchDoc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.Hash(benchDoc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := canon.Check(benchDoc); err != nil {
			b.Fatal(err)
		}
	}
}
