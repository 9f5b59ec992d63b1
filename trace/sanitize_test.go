package trace

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/termsafe"
	"github.com/agentrt/agentrt/internal/termsafe/termsafetest"
)

// checkSanitize runs Sanitize on each input and compares with the wanted output.
func checkSanitize(t *testing.T, cases []struct{ in, want string }) {
	t.Helper()
	for _, c := range cases {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%+q)\n got %+q\nwant %+q", c.in, got, c.want)
		}
	}
}

// The Trojan Source attack and every bidi control on its own: each is spelled
// out, and none survives as a raw rune.
func TestSanitize_BidiOverridesEscaped(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{
			"access_level != \"user\u202E \u2066// Check if admin\u2069 \u2066\"",
			`access_level != "user\u{202E} \u{2066}// Check if admin\u{2069} \u{2066}"`,
		},
		{"invoice_\u202Efdp.exe", `invoice_\u{202E}fdp.exe`},
		{"\u202A\u202B\u202C\u202D\u202E", `\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}`},
		{"\u2066\u2067\u2068\u2069", `\u{2066}\u{2067}\u{2068}\u{2069}`},
		{"a\u200Eb\u200Fc\u061Cd", `a\u{200E}b\u{200F}c\u{061C}d`},
		{"\u206A\u206F", `\u{206A}\u{206F}`}, // deprecated format controls
	})
	for r := rune(0x202A); r <= 0x202E; r++ {
		if strings.ContainsRune(Sanitize("x"+string(r)+"y"), r) {
			t.Errorf("U+%04X survived", r)
		}
	}
}

// Zero-width, invisible and private characters: each becomes a visible escape.
func TestSanitize_ZeroWidthAndInvisibleEscaped(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{"pay\u200Bpal", `pay\u{200B}pal`},
		{"\u200B\u200C\u200D", `\u{200B}\u{200C}\u{200D}`},
		{"\u2060\u2061\u2062\u2063\u2064", `\u{2060}\u{2061}\u{2062}\u{2063}\u{2064}`},
		{"\uFEFFstart", `\u{FEFF}start`},
		{"a\u180Eb", `a\u{180E}b`},
		// Mongolian free variation selectors are nonspacing marks, so up to
		// four would ride invisibly on any base.
		{"a\u180B\u180C\u180D\u180Fb", `a\u{180B}\u{180C}\u{180D}\u{180F}b`},
		{"\u1820\u180B", "\u1820" + `\u{180B}`},
		{"ad\u00ADmin", `ad\u{00AD}min`},
		{"a\u034Fb", `a\u{034F}b`},
		{"\u115F\u1160\u3164\uFFA0", `\u{115F}\u{1160}\u{3164}\u{FFA0}`},
		{"\u17B4\u17B5", `\u{17B4}\u{17B5}`},
		{"\uFFF9x\uFFFA", `\u{FFF9}x\u{FFFA}`},
		// Tag characters smuggle ASCII invisibly: "hi" as tags.
		{"ok\U000E0001\U000E0068\U000E0069\U000E007F", `ok\u{E0001}\u{E0068}\u{E0069}\u{E007F}`},
		{"\U000E0000", `\u{E0000}`},
		// Ideographic variation selectors are always escaped.
		{"葛\U000E0100", `葛\u{E0100}`},
		{"\U000E01EF", `\u{E01EF}`},
		// Private use depends on the font; noncharacters are never text.
		{"\uE000\U000F0000\U0010FFFD", `\u{E000}\u{F0000}\u{10FFFD}`},
		{"\uFDD0\uFFFE\uFFFF\U0010FFFF", `\u{FDD0}\u{FFFE}\u{FFFF}\u{10FFFF}`},
	})
}

// A variation selector survives once, directly after a printed base; a chain
// of them (a known way to hide bytes after an emoji) is escaped.
func TestSanitize_VariationSelectorKeptOnlyDirectlyAfterABase(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{"❤\uFE0F", "❤\uFE0F"},
		{"1\uFE0F\u20E3", "1\uFE0F\u20E3"},
		{"\uFE0F", `\u{FE0F}`},
		{"😀\uFE00\uFE01\uFE0F", "😀\uFE00" + `\u{FE01}\u{FE0F}`},
		{"e\u0301\uFE0F", "e\u0301" + `\u{FE0F}`},
		{"a\n\uFE0F", `a\n\u{FE0F}`},
	})
}

// Letters of many scripts, their usual combining marks, and emoji made of
// one code point, regional indicators or skin-tone modifiers, print as given.
func TestSanitize_OrdinaryScriptsAndEmojiUnchanged(t *testing.T) {
	for _, s := range []string{
		"Hello, world! 0123456789 ~`!@#$%^&*()_+-=[]{}|;:'\",.<>/?",
		"Привет, мир",
		"Γειά σου κόσμε",
		"你好，世界",
		"こんにちは、カタカナ",
		"مرحبا بالعالم",
		"مَرْحَبًا",
		"שָׁלוֹם עוֹלָם",
		"नमस्ते दुनिया",
		"क्षत्रिय",
		"สวัสดีชาวโลก",
		"안녕하세요",
		"Tie\u0302\u0301ng Vie\u0323\u0302t", // decomposed Vietnamese
		"e\u0301\u0302\u0303\u0304",          // exactly four marks
		"བོད་སྐད་",
		"😀 🎉 🚀",
		"🇺🇸🇯🇵🇺🇦",
		"👍🏽 👋🏿",
		"❤️ ✔️ 1️⃣ #️⃣",
		"\U0001FAE9",                   // reserved for emoji; newer than Go's tables
		"∑ x² ≤ ∞, ½ → ∂",              // symbols
		"a\u00A0b\u3000c\u2003d",       // no-break, ideographic and em spaces
		"\uFFFD replacement character", // a real U+FFFD is text
	} {
		if got := Sanitize(s); got != s {
			t.Errorf("Sanitize(%+q) = %+q, want it unchanged", s, got)
		}
	}
}

// ZWJ is invisible formatting, so emoji ZWJ sequences show the escape between
// their parts; a subdivision flag shows its tag characters.
func TestSanitize_EmojiZWJSequenceShowsEscapeBetweenParts(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{"👨\u200D👩\u200D👧", `👨\u{200D}👩\u{200D}👧`},
		{"🏳\uFE0F\u200D🌈", "🏳\uFE0F" + `\u{200D}🌈`},
		{
			"🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
			`🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}`,
		},
	})
}

// "Zalgo" text: a base keeps four marks and the rest of the run becomes a
// count, for every base, for marks with no base, and across mark categories.
func TestSanitize_CombiningMarkFloodCut(t *testing.T) {
	four := "\u0336\u0336\u0336\u0336"
	checkSanitize(t, []struct{ in, want string }{
		{"Z" + strings.Repeat("\u0336", 100) + "algo", "Z" + four + `\[+96 combining marks dropped]algo`},
		{"a" + strings.Repeat("\u0336", 5), "a" + four + `\[+1 combining marks dropped]`},
		{
			"a" + strings.Repeat("\u0336", 6) + "b" + strings.Repeat("\u0336", 7),
			"a" + four + `\[+2 combining marks dropped]b` + four + `\[+3 combining marks dropped]`,
		},
		// With no base at all.
		{strings.Repeat("\u0301", 10), strings.Repeat("\u0301", 4) + `\[+6 combining marks dropped]`},
		// Mn, Mc, Me together count as one run.
		{"a\u0301\u0903\u20DD\u0302\u0303\u0304", "a\u0301\u0903\u20DD\u0302" + `\[+2 combining marks dropped]`},
		// An escape in the run is a new base; the marker comes before it.
		{
			"a" + strings.Repeat("\u0336", 5) + "\u034F" + strings.Repeat("\u0336", 6),
			"a" + four + `\[+1 combining marks dropped]\u{034F}` + four + `\[+2 combining marks dropped]`,
		},
		// A kept variation selector counts as one of the four.
		{"❤\uFE0F\u0301\u0302\u0303\u0304", "❤\uFE0F\u0301\u0302\u0303" + `\[+1 combining marks dropped]`},
	})
}

// Line breaks and tabs get their short escapes; other controls, including
// the ones that clear the screen or retitle the window, get \u{…}.
func TestSanitize_ControlsAndLineBreaksEscaped(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{"line1\nline2\r\n\tx", `line1\nline2\r\n\tx`},
		{"\x1b[2J\x1b[H", `\u{001B}[2J\u{001B}[H`},
		{"\x1b]0;pwned\x07", `\u{001B}]0;pwned\u{0007}`},
		{"\x00\x01\x08\x0b\x0c\x1f\x7f", `\u{0000}\u{0001}\u{0008}\u{000B}\u{000C}\u{001F}\u{007F}`},
		{"\u0080\u0085\u009b\u009f", `\u{0080}\u{0085}\u{009B}\u{009F}`},
		{"a\u2028b\u2029c", `a\u{2028}b\u{2029}c`},
	})
	for b := 0; b < 0x20; b++ {
		if got := Sanitize(string(rune(b))); strings.ContainsAny(got, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f") {
			t.Errorf("Sanitize(%#x) = %q keeps a control byte", b, got)
		}
	}
}

// Each invalid byte becomes one U+FFFD, and the result is valid UTF-8.
func TestSanitize_InvalidUTF8Replaced(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x80", "\uFFFD\uFFFD"},                      // cut short
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},            // a surrogate
		{"\xc0\xaf", "\uFFFD\uFFFD"},                      // overlong '/'
		{"\xf4\x90\x80\x80", strings.Repeat("\uFFFD", 4)}, // past U+10FFFF
		{"ok\x9b2J", "ok\uFFFD2J"},                        // a raw C1 byte is not UTF-8
	})
	if got := Sanitize("\xff\xfe\xfd"); !utf8.ValidString(got) {
		t.Errorf("Sanitize returned invalid UTF-8 %q", got)
	}
}

// Backslashes are doubled, so typing an escape or a marker by hand cannot
// produce what Sanitize prints for the real character.
func TestSanitize_BackslashEscapesCannotBeForged(t *testing.T) {
	checkSanitize(t, []struct{ in, want string }{
		{`C:\temp\new`, `C:\\temp\\new`},
		{`\u{202E}`, `\\u{202E}`},
		{"\u202E", `\u{202E}`},
		{`\[+9 combining marks dropped]`, `\\[+9 combining marks dropped]`},
		{`\n`, `\\n`},
		{"\n", `\n`},
	})
	if Sanitize(`\u{202E}`) == Sanitize("\u202E") {
		t.Error("a typed escape looks like a real one")
	}
}

// Printable ASCII is returned as is, without allocating.
func TestSanitize_PrintableASCIIReturnedWithoutAllocating(t *testing.T) {
	s := "run 01HXYZ finished: ok (3 steps, 1.2s) ~ [x] {y}"
	if got := Sanitize(s); got != s {
		t.Fatalf("Sanitize(%q) = %q", s, got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Sanitize(s) }); n != 0 {
		t.Errorf("Sanitize allocated %v times on printable ASCII", n)
	}
}

// FuzzTruncate checks Truncate against a range loop over the input.
func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 8)
	f.Add("日本語です", 7)
	f.Add("a\xe6\x97\xa5\x80\x80b", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Truncate(s, n)
		if len(s) <= n {
			if got != s {
				t.Fatalf("Truncate(%q, %d) = %q, want it unchanged", s, n, got)
			}
			return
		}
		if n < 0 {
			n = 0
		}
		if len(got) > n {
			t.Fatalf("Truncate(%q, %d) = %q is too long", s, n, got)
		}
		limit, mark := n, ""
		if n >= len("…") {
			limit, mark = n-len("…"), "…"
		}
		// The longest prefix ending where a range loop starts a rune.
		want := 0
		for i := range s {
			if i > limit {
				break
			}
			want = i
		}
		if got != s[:want]+mark {
			t.Fatalf("Truncate(%q, %d) = %q, want %q", s, n, got, s[:want]+mark)
		}
	})
}

// unescape reads Sanitize's output back: the runes it shows and how many
// combining marks it says it dropped. Any backslash that does not start one of
// Sanitize's escapes is an error, which is what makes escapes unforgeable.
func unescape(out string) (runes []rune, dropped int, err error) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		i += size
		if r != '\\' {
			runes = append(runes, r)
			continue
		}
		if i == len(out) {
			return nil, 0, fmt.Errorf("lone backslash at the end")
		}
		switch c := out[i]; c {
		case '\\':
			runes = append(runes, '\\')
			i++
		case 'n', 'r', 't':
			runes = append(runes, map[byte]rune{'n': '\n', 'r': '\r', 't': '\t'}[c])
			i++
		case 'u':
			end := strings.IndexByte(out[i:], '}')
			if !strings.HasPrefix(out[i:], "u{") || end < 0 {
				return nil, 0, fmt.Errorf("malformed escape at %d", i)
			}
			hex := out[i+2 : i+end]
			v, err := strconv.ParseUint(hex, 16, 32)
			if err != nil || len(hex) < 4 || hex != strings.ToUpper(hex) ||
				(len(hex) > 4 && hex[0] == '0') || v > unicode.MaxRune {
				return nil, 0, fmt.Errorf("non-canonical escape %q", hex)
			}
			if v == '\n' || v == '\r' || v == '\t' {
				return nil, 0, fmt.Errorf("%q has a short escape", hex)
			}
			runes = append(runes, rune(v))
			i += end + 1
		case '[':
			const tail = " combining marks dropped]"
			end := strings.Index(out[i:], tail)
			if !strings.HasPrefix(out[i:], "[+") || end < 0 {
				return nil, 0, fmt.Errorf("malformed marker at %d", i)
			}
			n, err := strconv.Atoi(out[i+2 : i+end])
			if err != nil || n <= 0 {
				return nil, 0, fmt.Errorf("bad marker count %q", out[i+2:i+end])
			}
			dropped += n
			i += end + len(tail)
		default:
			return nil, 0, fmt.Errorf("unknown escape \\%c", c)
		}
	}
	return runes, dropped, nil
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "plain ascii", `back\slash`, `\u{202E}`, "line\nbreak\r\n\ttab",
		"\x1b[2J\x1b[H", "\u0085\u009b", "user\u202E \u2066admin\u2069",
		"pay\u200Bpal\uFEFF", "a\u2028b\u2029c", "ok\U000E0001\U000E0068\U000E007F",
		"Z" + strings.Repeat("\u0336", 20), strings.Repeat("\u0301", 9),
		"❤\uFE0F\uFE0F", "👨\u200D👩\u200D👧", "🇺🇸 👍🏽 1\uFE0F\u20E3",
		"a\xffb\xe2\x80", "नमस्ते שָׁלוֹם مَرْحَبًا", "\uE000\uFDD0\U0001FAE9",
		"x\u180B\u180C\u180D\u180F", "\u1820\u180B\u1821",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%+q) = %+q is not valid UTF-8", s, out)
		}
		marks := 0
		for _, r := range out {
			if why := termsafetest.Forbidden(r); why != "" {
				t.Fatalf("Sanitize(%+q) = %+q keeps U+%04X (%s)", s, out, r, why)
			}
			if unicode.IsMark(r) {
				marks++
				if marks > termsafe.MaxMarks {
					t.Fatalf("Sanitize(%+q) = %+q stacks %d marks", s, out, marks)
				}
			} else {
				marks = 0
			}
		}

		// Sanitizing again changes only the backslashes, so already-safe text
		// is stable; printable ASCII without one is returned as given.
		if again, want := Sanitize(out), strings.ReplaceAll(out, `\`, `\\`); again != want {
			t.Fatalf("Sanitize(Sanitize(%+q)) = %+q, want %+q", s, again, want)
		}
		ascii := true
		for i := 0; i < len(s); i++ {
			ascii = ascii && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '\\'
		}
		if ascii && out != s {
			t.Fatalf("Sanitize(%q) = %q, want it unchanged", s, out)
		}

		// The output reads back to the input, less the dropped marks, with
		// each invalid byte as U+FFFD.
		got, dropped, err := unescape(out)
		if err != nil {
			t.Fatalf("Sanitize(%+q) = %+q: %v", s, out, err)
		}
		want := []rune(s)
		if len(got)+dropped != len(want) {
			t.Fatalf("Sanitize(%+q) = %+q: %d runes and %d dropped, want %d in all", s, out, len(got), dropped, len(want))
		}
		j := 0 // got must be want with some marks taken out
		for _, r := range want {
			if j < len(got) && got[j] == r {
				j++
			} else if !unicode.IsMark(r) {
				t.Fatalf("Sanitize(%+q) = %+q lost U+%04X", s, out, r)
			}
		}
		if j != len(got) {
			t.Fatalf("Sanitize(%+q) = %+q reads back as %+q", s, out, string(got))
		}
	})
}
