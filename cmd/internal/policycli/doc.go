// Package policycli is the agentrt-policy command line: check, test,
// explain and recheck, one file each. Output that a policy file, a test
// table or a runs database chose passes through trace.Sanitize.
package policycli
