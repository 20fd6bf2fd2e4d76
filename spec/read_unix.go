//go:build unix

package spec

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading without blocking (a FIFO opens at once and is then
// refused by fstat) and without following a final symlink.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
