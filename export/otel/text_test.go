package otel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Cutting never splits a rune, never passes the bound before the marker,
// says how many bytes it left out, and leaves short text alone.
func TestTruncate_CutsOnARuneBoundary(t *testing.T) {
	for _, s := range []string{"héllo wörld", strings.Repeat("😀", 40), strings.Repeat("a", 63) + "é", "\xff\xfeinvalid"} {
		for max := 1; max <= len(s)+1; max++ {
			got := truncate(s, max)
			if !utf8.ValidString(got) {
				t.Fatalf("truncate(%q, %d) = %q is not valid UTF-8", s, max, got)
			}
			head, tail, cut := strings.Cut(got, "…[truncated: ")
			if len(head) > max {
				t.Fatalf("truncate(%q, %d) kept %d bytes", s, max, len(head))
			}
			clean := strings.ToValidUTF8(s, "\uFFFD")
			if !cut {
				if got != clean {
					t.Fatalf("truncate(%q, %d) = %q without a marker", s, max, got)
				}
				continue
			}
			if !strings.HasPrefix(clean, head) || tail != itoa(len(clean)-len(head))+" bytes]" {
				t.Fatalf("truncate(%q, %d) = %q", s, max, got)
			}
		}
	}
	if truncate("short", 64) != "short" {
		t.Fatal("short text changed")
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}
