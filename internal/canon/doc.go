// Package canon checks JSON at the runtime's boundary and writes it in one
// canonical form, so that documents that mean the same thing hash the same.
//
// [Check] refuses what cannot be hashed without loss: deep nesting, invalid
// UTF-8, anything that is not exactly one JSON value, unpaired surrogate
// escapes, repeated keys, and numbers too long or too far from one to handle
// safely. The refusals are tested in a fixed order so that a document with
// several faults always reports the same reason.
//
// [Canonical] re-emits an accepted document with sorted keys, no
// insignificant whitespace, numbers exactly as written and strings escaped
// the way encoding/json escapes them with HTML escaping on. Stored hashes
// depend on these bytes, so they are pinned by golden vectors in testdata.
//
// [Policy] is the same form without HTML escaping, for handing documents to
// policies and people. It is never hashed.
package canon
