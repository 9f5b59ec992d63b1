// Package schema compiles tool input schemas and checks arguments against
// them, on top of github.com/santhosh-tekuri/jsonschema/v6.
//
// A schema compiles only from itself and the library's embedded standard
// metaschemas: nothing is read from files or the network, and a schema that
// names any other document is refused with that document's URL. Arguments
// pass the boundary checks of package canon before the validator sees them,
// and a panic inside the validator is a refusal, never an acceptance.
package schema
