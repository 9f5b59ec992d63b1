//go:build !unix

package celpolicy

// readOwned refuses on systems where file ownership cannot be checked.
func readOwned(path string, _ int64) ([]byte, error) {
	return nil, &InsecureFileError{Path: path, Reason: "file ownership cannot be checked on this system"}
}
