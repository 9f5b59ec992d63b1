package agentrt

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The records a step and an approval are made of (Step, Decision,
// PolicyDecision, Observation, Approval) must carry every field through
// the copies a GateSession hands out (copyStep, copyPolicy, copyApproval),
// the normalisation its cache applies (stored), a store
// (record_fields_store_test.go) and the view package (the same file). The
// tests walk the fields by reflection, so a field added to one of the
// records is checked by all of them at once.

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// FillEveryField sets every exported field reachable from ptr (a pointer
// to a struct) to a non-zero value that names its path, such as
// "Step.Decision.Tool": pointers are allocated, slices get one element,
// raw JSON is an object naming the path. A field of a kind it does not
// know fails the test, so that a new kind of field is thought about.
func FillEveryField(t testing.TB, ptr any) {
	t.Helper()
	v := reflect.ValueOf(ptr).Elem()
	fillValue(t, v, v.Type().Name())
}

func fillValue(t testing.TB, v reflect.Value, path string) {
	t.Helper()
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 1000*len(path), time.UTC)))
		return
	case v.Type() == rawType:
		v.SetBytes([]byte(`{"f":"` + path + `"}`))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillValue(t, v.Field(i), path+"."+f.Name)
			}
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("b-" + path))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(t, s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.String:
		v.SetString("v-" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(path)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(len(path)) + 0.5)
	default:
		t.Fatalf("%s is a %s, which FillEveryField cannot fill: teach it (record_fields_test.go)", path, v.Kind())
	}
}

// FieldPaths lists the leaf fields of t (a struct type) as paths, such as
// "Step.Observation.Blocks[0].Text", in declaration order. Times and raw
// JSON are leaves; pointers and slices are followed.
func FieldPaths(t reflect.Type) []string {
	var out []string
	fieldPaths(t, t.Name(), &out)
	return out
}

func fieldPaths(t reflect.Type, path string, out *[]string) {
	switch {
	case t == timeType || t == rawType:
	case t.Kind() == reflect.Pointer:
		fieldPaths(t.Elem(), path, out)
		return
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		fieldPaths(t.Elem(), path+"[0]", out)
		return
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				fieldPaths(f.Type, path+"."+f.Name, out)
			}
		}
		return
	}
	*out = append(*out, path)
}

// DiffPaths lists the paths at which a and b differ, times compared with
// Equal and everything else with reflect.DeepEqual.
func DiffPaths(a, b any) []string {
	var out []string
	va := reflect.ValueOf(a)
	diffPaths(va, reflect.ValueOf(b), va.Type().Name(), &out)
	return out
}

func diffPaths(a, b reflect.Value, path string, out *[]string) {
	switch {
	case a.Type() == timeType:
		if !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
			*out = append(*out, path)
		}
	case a.Kind() == reflect.Struct:
		for i := range a.NumField() {
			if f := a.Type().Field(i); f.IsExported() {
				diffPaths(a.Field(i), b.Field(i), path+"."+f.Name, out)
			}
		}
	case a.Kind() == reflect.Pointer && !a.IsNil() && !b.IsNil():
		diffPaths(a.Elem(), b.Elem(), path, out)
	case a.Kind() == reflect.Slice && a.Type() != rawType && a.Type().Elem().Kind() != reflect.Uint8 && a.Len() == b.Len():
		for i := range a.Len() {
			diffPaths(a.Index(i), b.Index(i), path+"["+string(rune('0'+i%10))+"]", out)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, path)
		}
	}
}

// sharedMemory lists the paths at which b shares a pointee or a slice's
// backing array with a: where a consumer writing to its copy would write
// to the original.
func sharedMemory(a, b reflect.Value, path string, out *[]string) {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if f := a.Type().Field(i); f.IsExported() {
				sharedMemory(a.Field(i), b.Field(i), path+"."+f.Name, out)
			}
		}
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			*out = append(*out, path)
			return
		}
		sharedMemory(a.Elem(), b.Elem(), path, out)
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			*out = append(*out, path)
			return
		}
		for i := range min(a.Len(), b.Len()) {
			sharedMemory(a.Index(i), b.Index(i), path+"[0]", out)
		}
	case reflect.String:
		// Strings are immutable; sharing their bytes is safe.
	}
}

// Every field of a step (its decision, policy decision and observation
// included) and of an approval reaches the copy a GateSession hands out,
// and no slice or pointer of the copy is the original's, so a consumer
// that writes to its copy cannot change the session's record.
func TestCopy_EveryRecordFieldIsCopiedAndNothingShared(t *testing.T) {
	var st Step
	FillEveryField(t, &st)
	var p PolicyDecision
	FillEveryField(t, &p)
	var a Approval
	FillEveryField(t, &a)
	for _, c := range []struct {
		name       string
		orig, copy any
	}{
		{"copyStep", st, copyStep(st)},
		{"copyPolicy", p, copyPolicy(p)},
		{"copyApproval", a, copyApproval(a)},
	} {
		if d := DiffPaths(c.orig, c.copy); len(d) > 0 {
			t.Errorf("%s lost or changed %s", c.name, strings.Join(d, ", "))
		}
		var shared []string
		sharedMemory(reflect.ValueOf(c.orig), reflect.ValueOf(c.copy), reflect.TypeOf(c.orig).Name(), &shared)
		if len(shared) > 0 {
			t.Errorf("%s shares memory with the original at %s: copy it in session.go", c.name, strings.Join(shared, ", "))
		}
	}
}

// mangle makes every string of a filled record one encoding/json rewrites
// (a byte of invalid UTF-8) and every raw JSON value one it compacts and
// escapes, so that stored's shortcut must do for each field what a store
// write and read do.
func mangle(v reflect.Value) {
	switch {
	case v.Type() == timeType:
	case v.Type() == rawType:
		v.SetBytes([]byte(" [ " + string(v.Bytes()) + ` , "<&>" ] `))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mangle(v.Field(i))
			}
		}
	case v.Kind() == reflect.Pointer && !v.IsNil():
		mangle(v.Elem())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		for i := range v.Len() {
			mangle(v.Index(i))
		}
	case v.Kind() == reflect.String:
		v.SetString(v.String() + "\xff")
	}
}

// storedCase is stored's answer for one record and what a store write
// and read give for it. enter, when set, does to the mangled record what
// the engine does where such a record enters.
func storedCase[T any](t *testing.T, enter func(*T)) (got, want T) {
	t.Helper()
	var v T
	FillEveryField(t, &v)
	mangle(reflect.ValueOf(&v).Elem())
	if enter != nil {
		enter(&v)
	}
	b, err := json.Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	g, err := stored(&v)
	if err != nil {
		t.Fatal(err)
	}
	return *g, want
}

// The session caches a decision, a policy decision and an observation as
// stored says a store holds them, without an encode and decode; every
// field, a new one included, must come out as encoding/json's round trip
// makes it, or the cache and a reload disagree.
func TestStored_EveryRecordFieldIsNormalisedAsTheStoreHoldsIt(t *testing.T) {
	check := func(name string, got, want any) {
		if d := DiffPaths(got, want); len(d) > 0 {
			t.Errorf("stored(%s) differs from its JSON round trip at %s: normalise the field in session.go", name, strings.Join(d, ", "))
		}
	}
	d, wd := storedCase[Decision](t, nil)
	check("Decision", d, wd)
	p, wp := storedCase[PolicyDecision](t, nil)
	check("PolicyDecision", p, wp)
	// A tool result's blocks enter through boundBlocks, which makes their
	// text valid; stored keeps them as they are.
	o, wo := storedCase(t, func(o *Observation) {
		o.Blocks[0].Type = ResultText
		o.Blocks = boundBlocks(o.Blocks)
	})
	check("Observation", o, wo)
}
