package vmimage

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive lock on the cache folder, so two matrix runs
// sharing a cache never build the same image into the same temp paths. It
// waits for the other run; the returned func releases the lock.
func (b *Builder) Lock() (func(), error) {
	if err := os.MkdirAll(b.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("making the cache folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(b.CacheDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b.logf("image: waiting for another matrix run to release %s", b.CacheDir)
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking the image cache: %w", err)
		}
	}
	return func() { f.Close() }, nil
}
