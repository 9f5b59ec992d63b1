// Package cli is agentrt-proxy's command line: one file per command, parse
// and validate every flag, then load the configuration. Text escapes what
// a server or the model chose; -json output is JSON Lines.
package cli
