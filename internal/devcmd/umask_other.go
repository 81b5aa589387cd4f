//go:build !unix

package devcmd

// privateFiles has no umask to set off Unix; the data directory is
// created 0700 all the same.
func privateFiles() (restore func()) { return func() {} }
