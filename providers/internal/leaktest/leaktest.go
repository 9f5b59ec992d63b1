// Package leaktest encodes a value every way a program might print, log or
// send it, so the adapters' tests can check that none of them shows a key.
package leaktest

import (
	"bytes"
	"encoding/base64"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"text/template"
)

// Verbs are the fmt verbs tried on every value, the ones that print a
// string's bytes included: %x and %X spell them in hex, and a verb a string
// does not take, such as %d, prints it inside %!d(string=…).
var Verbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %[1]v"}

// Encodings returns v in every fmt verb, through slog's text and JSON
// handlers, encoding/json, encoding/xml, encoding/gob and text/template.
// An encoder's error is kept as the encoding, since an error message can
// repeat what it failed on; must names the encoders that have to succeed.
func Encodings(t testing.TB, v any, must ...string) []string {
	t.Helper()
	var outs []string
	for _, verb := range Verbs {
		outs = append(outs, fmt.Sprintf(verb, v))
	}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("msg", "v", v)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("msg", "v", v)
	outs = append(outs, logs.String())

	check := func(name string, out []byte, err error) {
		if err != nil {
			if mustSucceed(must, name) {
				t.Errorf("%s of %T: %v", name, v, err)
			}
			outs = append(outs, err.Error())
			return
		}
		outs = append(outs, string(out))
	}
	j, err := json.Marshal(v)
	check("json", j, err)
	x, err := xml.Marshal(v)
	check("xml", x, err)
	var g bytes.Buffer
	err = gob.NewEncoder(&g).Encode(v)
	check("gob", g.Bytes(), err)
	for _, text := range []string{"{{.}}", `{{printf "%+v" .}}`, `{{printf "%#v" .}}`} {
		var b bytes.Buffer
		err := template.Must(template.New("t").Parse(text)).Execute(&b, v)
		check("template", b.Bytes(), err)
	}
	return outs
}

// Value is one value to encode and the encoders that must succeed on it.
type Value struct {
	V    any
	Must []string
}

// configs holds a configuration every way a struct can.
type configs[C any] struct {
	XMLName xml.Name `xml:"configs" json:"-"`
	C       C
	P       *C
	cfg     C
	ptr     *C
}

// holder holds a configuration and a model every way a struct can.
type holder[C, M any] struct {
	XMLName xml.Name `xml:"holder" json:"-"`
	C       C
	P       *C
	M       M
	cfg     C
	ptr     *C
	model   M
}

// Holders returns cfg and m, and values holding them: by value and by
// pointer, in exported and unexported fields, in a slice, a map and unnamed
// structs. gob cannot encode a model, which has no exported fields, and xml
// cannot encode a map or an unnamed struct, so those encoders need not
// succeed there; every other must.
func Holders[C, M any](cfg C, m M) []Value {
	all := []string{"json", "xml", "gob", "template"}
	noGob := []string{"json", "xml", "template"}
	c := configs[C]{C: cfg, P: &cfg, cfg: cfg, ptr: &cfg}
	h := holder[C, M]{C: cfg, P: &cfg, M: m, cfg: cfg, ptr: &cfg, model: m}
	return []Value{
		{cfg, all}, {&cfg, all}, {c, all}, {&c, all}, {[]C{cfg}, all},
		{map[string]C{"k": cfg}, []string{"json", "gob", "template"}},
		{struct{ C C }{cfg}, []string{"json", "gob", "template"}},
		{struct{ c C }{cfg}, []string{"template"}},
		{m, noGob}, {h, noGob}, {&h, noGob},
		{struct{ M M }{m}, []string{"json", "template"}},
		{struct{ m M }{m}, []string{"template"}},
	}
}

func mustSucceed(must []string, name string) bool {
	for _, m := range must {
		if m == name {
			return true
		}
	}
	return false
}

// Leak returns the first output that shows secret as itself, in hex or in
// base64, or "" when none does.
func Leak(outs []string, secret string) string {
	forms := []string{secret, hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))),
		base64.StdEncoding.EncodeToString([]byte(secret))}
	for _, o := range outs {
		for _, f := range forms {
			if strings.Contains(o, f) {
				return o
			}
		}
	}
	return ""
}
