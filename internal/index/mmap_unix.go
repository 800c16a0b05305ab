//go:build unix

package index

import (
	"os"
	"syscall"
)

// mapFile maps f's first size bytes into memory, private and copy-on-write
// (the file is never changed through the mapping). unmap releases it.
func mapFile(f *os.File, size int) (b []byte, unmap func(), ok bool) {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, false
	}
	return b, func() { syscall.Munmap(b) }, true
}
