//go:build unix

package devcmd

import "syscall"

// privateFiles makes every file and directory the process creates from
// now on private to its user (umask 077), as the data directory's own
// files are: the embedded registry's storage driver creates its files
// 0666 and directories 0777 and leaves the rest to the umask. restore
// puts the previous umask back.
func privateFiles() (restore func()) {
	old := syscall.Umask(0o077)
	return func() { syscall.Umask(old) }
}
