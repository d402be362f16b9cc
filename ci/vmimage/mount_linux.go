package vmimage

import "golang.org/x/sys/unix"

func lazyUnmount(path string) error { return unix.Unmount(path, unix.MNT_DETACH) }
