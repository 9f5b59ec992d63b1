// Package disclosuretest holds the planted corpus the disclosure tests of
// every module share: one secret of each format issue 42 names, made at
// run time so no file of the repository holds a token a scanner would
// flag, and Leaks, which says which of them a byte slice still holds.
package disclosuretest
