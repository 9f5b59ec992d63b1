// Package replay provides models that need no provider, so tests and CI never
// call one: Scripted serves canned responses, Recorder stores each exchange a
// real model makes, and Replayer serves those recordings back in order.
//
// Recordings are keyed by Key, a SHA-256 of the model name and the request,
// so a replay serves a response only to the exact request that produced it.
// A recording holds a whole conversation, so the Recorder keeps its directory
// owner-only (0700) and writes each file owner-only (0600) through a
// temporary file it creates itself, synced and renamed into place.
package replay
