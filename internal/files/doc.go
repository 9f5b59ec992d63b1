// Package files holds the one rule agentrt applies to every file it reads
// for trust and every file it writes for durability.
//
// A trusted file (a configuration, a manifest or pin, a rules or policy
// file, a key file, a secret, a pinned keys file) decides what agentrt
// allows, so whoever can write it decides too. ReadOwned reads such a file
// only when it is a regular file, reached without following a symbolic
// link, owned by the effective user, writable by neither group nor others,
// and no larger than the caller's bound. The checks are made on the open
// descriptor, so a file swapped in after the check is never the one read.
// Check applies the same rule by path to files agentrt cannot open itself
// (a database and its sidecars, which the database driver opens).
//
// A durable file (a manifest, a proxy or host configuration, an export
// cursor, a replay recording) must survive a crash whole or not at all.
// WriteAtomic writes a temporary file in the target's directory, sets its
// mode, syncs it, renames it over the target and syncs the directory.
// WriteNew does the same for a file that must never replace one already
// there (a private key, a backup): it links the synced file to the target
// name, which fails when the name is taken.
//
// Every refusal is an *InsecureModeError, which matches ErrInsecureMode
// (and ErrSymlink for a link, ErrTooLarge for a file over its bound); its
// Problem says which part of the rule the file broke. The package is
// internal: package agentrt re-exports the error and its sentinels, and
// each module reaches the helpers through its own public readers
// (agentrt.LoadPinnedKeys, mcp.ReadOwned, cel.Load, proxy.LoadConfig).
// docs/decisions/0010-one-file-rule.md says why.
package files
