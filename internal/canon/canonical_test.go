package canon_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/canon"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenInputs are the documents pinned in testdata/golden.json. Stored
// hashes depend on their canonical forms, so a change here or in the encoder
// needs -update and a reviewed diff.
var goldenInputs = []string{
	`{}`,
	`[]`,
	`null`,
	`true`,
	`false`,
	`""`,
	`0`,
	`{"b":1,"a":2}`,
	`{"a":1,"B":2,"_":3,"aa":4,"":5,"a b":6,"~":7}`,
	`{"é":1,"z":2,"éx":3,"\u00e9y":4,"😀":5,"中":6}`,
	`{"a":{"b":{"b":2,"a":1}},"A":null}`,
	`  { "z" : [ true , false , null ] ,` + "\n\t\r" + ` "a" : { } }  `,
	`[10, 10.0, 1e1, 1E1, 1e+1, 1E-1, -0, 0, -0.0, 0.5e-3, 100e-2]`,
	`[123456789012345678901234567890, -9007199254740993, 3.141592653589793238462643383279]`,
	`[1e10000, 1e-10000, 1e00000000000000000000000001]`,
	`{"a":[1,[2,[3,{"b":{"c":[]}}]]],"d":[[],[[]],{}]}`,
	`" \" \\ \/ \b \f \n \r \t "`,
	`"\u0000\u0001\u001f\u007f\u0080"`,
	`"<script>alert('x')</script> & &amp;"`,
	`"\u003c\u003e\u0026"`,
	`{"<":">","&":"&&"}`,
	`"\u2028\u2029"`,
	"\"raw \u2028 and \u2029\"",
	`"héllo wörld 日本語 😀"`,
	`"\u00e9\u65e5\ud83d\ude00\uD83D\uDE01"`,
	`"\uFFFD\uFFFF\uFEFF"`,
	"\"\ufffd\ufeff\u200b\"",
	`"\u0041\u0062/\/"`,
	`{"key with spaces":"v","key\twith\ttab":"w","key\nline":"x"}`,
	`[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}]`,
}

type goldenCase struct {
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	Hash      string `json:"hash"`
}

// The canonical form and hash of each golden input match the stored vectors
// byte for byte.
func TestContentHash_Golden(t *testing.T) {
	path := filepath.Join("testdata", "golden.json")
	var got []goldenCase
	for _, in := range goldenInputs {
		c, err := canon.Canonical([]byte(in))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", in, err)
		}
		h, err := canon.Hash([]byte(in))
		if err != nil {
			t.Fatalf("Hash(%s): %v", in, err)
		}
		if h != canon.HashBytes(c) {
			t.Errorf("Hash(%s) = %s, want the hash of the canonical form %s", in, h, canon.HashBytes(c))
		}
		got = append(got, goldenCase{Input: in, Canonical: string(c), Hash: h})
	}

	if *update {
		if err := os.WriteFile(path, goldenFile(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var want []goldenCase
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("golden file has %d cases, the test %d (run with -update and review the diff)", len(want), len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d:\n got  %+q\n want %+q", i, got[i], want[i])
		}
	}
}

// goldenFile writes the cases as JSON meant for review as a diff: one field
// per line, and every character that does not show, or shows ambiguously,
// written as an escape.
func goldenFile(cases []goldenCase) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, c := range cases {
		fmt.Fprintf(&b, "  {\n    \"input\": %s,\n    \"canonical\": %s,\n    \"hash\": %q\n  }",
			reviewQuote(c.Input), reviewQuote(c.Canonical), c.Hash)
		if i < len(cases)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes()
}

func reviewQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x7f && r >= 0x20:
			b.WriteRune(r)
		case unicode.IsPrint(r) && r != utf8.RuneError:
			b.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Hash is the SHA-256 of the canonical form, so documents that differ only in
// key order, whitespace or escaping share it.
func TestHash_IsTheSHA256OfTheCanonicalForm(t *testing.T) {
	const emptyObject = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	const emptyInput = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := canon.HashBytes(nil); got != emptyInput {
		t.Errorf("HashBytes(nil) = %s, want %s", got, emptyInput)
	}
	for _, in := range []string{`{}`, ` { } `, "{\n}"} {
		if got, err := canon.Hash([]byte(in)); err != nil || got != emptyObject {
			t.Errorf("Hash(%q) = %s, %v; want %s", in, got, err, emptyObject)
		}
	}
	a, _ := canon.Hash([]byte(`{"b":"<\u00e9>","a":[1, 2.0]}`))
	b, _ := canon.Hash([]byte(`{ "a" : [1,2.0], "b" : "\u003cé\u003e" }`))
	c, _ := canon.Hash([]byte(`{"a":[1,2],"b":"<é>"}`))
	if a != b {
		t.Errorf("equal documents hash differently: %s and %s", a, b)
	}
	if a == c {
		t.Error("2.0 and 2 hash the same; number literals must be kept")
	}
}

// For documents without repeated keys, the canonical form is exactly what
// encoding/json produces from the decoded value, so hashes stored by the
// predecessor stay valid.
func TestCanonical_MatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		in := randomDocument(rng)
		got, err := canon.Canonical(in)
		if err != nil {
			t.Fatalf("Canonical(%s): %v", in, err)
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("encoding/json cannot decode %s: %v", in, err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%s)\n got  %s\n want %s", in, got, want)
		}
	}
}

// The policy form escapes only what JSON requires, and decodes to the same
// value as the canonical form.
func TestPolicy_NoHTMLEscaping(t *testing.T) {
	in := `{"s":"<a href=\"x\">&amp;</a>\u2028\u2029\n\u0001\t","<k>":"\u003c"}`
	wantPolicy := "{\"<k>\":\"<\",\"s\":\"<a href=\\\"x\\\">&amp;</a>\u2028\u2029\\n\\u0001\\t\"}"
	wantCanonical := `{"\u003ck\u003e":"\u003c","s":"\u003ca href=\"x\"\u003e\u0026amp;\u003c/a\u003e\u2028\u2029\n\u0001\t"}`
	gotPolicy, err := canon.Policy([]byte(in))
	if err != nil || string(gotPolicy) != wantPolicy {
		t.Errorf("Policy = %s, %v\nwant     %s", gotPolicy, err, wantPolicy)
	}
	gotCanonical, err := canon.Canonical([]byte(in))
	if err != nil || string(gotCanonical) != wantCanonical {
		t.Errorf("Canonical = %s, %v\nwant        %s", gotCanonical, err, wantCanonical)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1000; i++ {
		in := randomDocument(rng)
		p, err := canon.Policy(in)
		if err != nil {
			t.Fatalf("Policy(%s): %v", in, err)
		}
		c, _ := canon.Canonical(in)
		// Equal canonical forms give equal policy forms: the canonical form
		// of a document is one such equal document.
		if pc, err := canon.Policy(c); err != nil || !bytes.Equal(pc, p) {
			t.Fatalf("Policy(Canonical(%s)) = %s, %v; want %s", in, pc, err, p)
		}
		if cp, err := canon.Canonical(p); err != nil || !bytes.Equal(cp, c) {
			t.Fatalf("Canonical(Policy(%s)) = %s, %v; want %s", in, cp, err, c)
		}
		if bytes.ContainsAny(p, "\n\r\t") {
			t.Fatalf("Policy(%s) = %s has insignificant whitespace or raw controls", in, p)
		}
	}
}

// Of a repeated key, the unchecked policy form keeps the last value, as
// encoding/json does, and still refuses everything else Check refuses.
func TestPolicyUnchecked_KeepsTheLastOfARepeatedKey(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":2,"a":3}`:                  `{"a":3,"b":2}`,
		`{"a":1,"\u0061":2,"a":{"x":1,"x":4}}`: `{"a":{"x":4}}`,
		`[{"k":"<"},{"k":1,"k":null}]`:         `[{"k":"<"},{"k":null}]`,
		`{"b":1,"a":2}`:                        `{"a":2,"b":1}`,
	} {
		got, err := canon.PolicyUnchecked([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("PolicyUnchecked(%s) = %s, %v; want %s", in, got, err, want)
		}
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		var w any
		if err := json.Unmarshal(got, &w); err != nil || !reflect.DeepEqual(v, w) {
			t.Errorf("PolicyUnchecked(%s) decodes to %v, encoding/json to %v", in, w, v)
		}
	}
	if _, err := canon.Policy([]byte(`{"a":1,"a":2}`)); err == nil {
		t.Error("Policy accepted a repeated key")
	}
}

// Canonicalising a canonical form changes nothing, whatever the input looked
// like.
func TestCanonical_Idempotent(t *testing.T) {
	inputs := append([]string(nil), goldenInputs...)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 1000; i++ {
		inputs = append(inputs, string(randomDocument(rng)))
	}
	for _, in := range inputs {
		once, err := canon.Canonical([]byte(in))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", in, err)
		}
		twice, err := canon.Canonical(once)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("Canonical(%s) = %s, then %s, %v", in, once, twice, err)
		}
	}
}

// Results never share memory with the pooled parser, and concurrent callers
// do not see each other's documents.
func TestCanonical_ResultsAreIndependentUnderConcurrency(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	docs := make([][]byte, 200)
	want := make([][]byte, len(docs))
	for i := range docs {
		docs[i] = randomDocument(rng)
		c, err := canon.Canonical(docs[i])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = c
	}
	first := bytes.Clone(want[0])
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 5; r++ {
				for i, d := range docs {
					got, err := canon.Canonical(d)
					if err != nil || !bytes.Equal(got, want[i]) {
						errs <- fmt.Sprintf("Canonical(%s) = %s, %v; want %s", d, got, err, want[i])
						return
					}
					if i%7 == 0 {
						_ = canon.Check([]byte(`{"a":1,"a":"\ud800"`))
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if !bytes.Equal(want[0], first) {
		t.Errorf("an earlier result changed to %s", want[0])
	}
}

// randomDocument writes a random JSON document without repeated keys, with
// random whitespace and random but valid escape spellings, so that the
// encoder sees the same value written many ways.
func randomDocument(rng *rand.Rand) []byte {
	var b bytes.Buffer
	writeValue(&b, rng, 0)
	return b.Bytes()
}

func space(b *bytes.Buffer, rng *rand.Rand) {
	if rng.IntN(3) == 0 {
		b.WriteString([]string{" ", "\n", "\t", "\r\n  ", "  "}[rng.IntN(5)])
	}
}

func writeValue(b *bytes.Buffer, rng *rand.Rand, depth int) {
	space(b, rng)
	n := 9
	if depth > 4 {
		n = 6 // scalars only
	}
	switch rng.IntN(n) {
	case 0:
		b.WriteString("null")
	case 1:
		b.WriteString([]string{"true", "false"}[rng.IntN(2)])
	case 2, 3:
		b.WriteString(randomNumber(rng))
	case 4, 5:
		writeString(b, rng, randomText(rng))
	case 6:
		b.WriteByte('[')
		k := rng.IntN(5)
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, rng, depth+1)
		}
		space(b, rng)
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		k := rng.IntN(6)
		seen := map[string]bool{}
		for i := 0; i < k; i++ {
			key := randomText(rng)
			if seen[key] {
				continue
			}
			seen[key] = true
			if len(seen) > 1 {
				b.WriteByte(',')
			}
			space(b, rng)
			writeString(b, rng, key)
			space(b, rng)
			b.WriteByte(':')
			writeValue(b, rng, depth+1)
		}
		space(b, rng)
		b.WriteByte('}')
	}
	space(b, rng)
}

func randomNumber(rng *rand.Rand) string {
	forms := []string{"0", "-0", "10", "10.0", "1e1", "1E+1", "1e-1", "-0.0", "0.5e-3",
		"123456789012345678901234567890", "-9007199254740993", "3.14159", "1e10000",
		"1e-10000", "1e00000000000000000000000001", "2.5E-0007"}
	if rng.IntN(2) == 0 {
		return forms[rng.IntN(len(forms))]
	}
	s := fmt.Sprint(rng.IntN(100000) - 50000)
	if rng.IntN(2) == 0 {
		s += "." + fmt.Sprint(rng.IntN(1000))
	}
	if rng.IntN(3) == 0 {
		s += []string{"e", "E", "e+", "e-", "E-"}[rng.IntN(5)] + fmt.Sprint(rng.IntN(400))
	}
	return s
}

var runePool = []rune("aZ09 _-~/.'\"\\<>&\x00\x01\x08\x09\x0a\x0c\x0d\x1f\x7fé中😀\u2028\u2029\ufffd\ufeff\u200b\U0010ffff\u00a0")

func randomText(rng *rand.Rand) string {
	var sb strings.Builder
	n := rng.IntN(8)
	for i := 0; i < n; i++ {
		sb.WriteRune(runePool[rng.IntN(len(runePool))])
	}
	return sb.String()
}

// writeString writes s as a JSON string, choosing a random valid spelling
// for each character.
func writeString(b *bytes.Buffer, rng *rand.Rand, s string) {
	b.WriteByte('"')
	for _, r := range s {
		short := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[r]
		mustEscape := r < 0x20 || r == '"' || r == '\\'
		switch {
		case short != "" && (mustEscape || rng.IntN(3) == 0) && rng.IntN(2) == 0:
			b.WriteString(short)
		case mustEscape || rng.IntN(4) == 0:
			hexFmt := []string{`\u%04x`, `\u%04X`}[rng.IntN(2)]
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, hexFmt+hexFmt, hi, lo)
			} else {
				fmt.Fprintf(b, hexFmt, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
