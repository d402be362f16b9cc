package vmimage

import (
	"bytes"
	"fmt"
	"sort"
)

// cpioEntry is one member of a newc ("070701") archive, the format the kernel
// unpacks into its initramfs. Writing it ourselves lets an unprivileged build
// add device nodes such as /dev/console, which the kernel needs before /init
// runs, and makes the archive byte-for-byte reproducible (fixed mtimes, sorted
// names).
type cpioEntry struct {
	Name     string // without a leading slash
	Mode     uint32 // file type bits plus permissions
	Data     []byte // file contents or symlink target
	DevMajor uint32 // for character and block devices
	DevMinor uint32
}

// File type bits of a cpio mode.
const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
	modeChar    = 0o020000
)

// cpioArchive is the archive of entries sorted by name (so parents come
// before children), with its trailer.
func cpioArchive(entries []cpioEntry) []byte {
	sorted := append([]cpioEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b bytes.Buffer
	// newc aligns the stream to four bytes after each header and each
	// file body.
	pad4 := func() { b.Write(make([]byte, (4-b.Len()%4)%4)) }
	for i, e := range append(sorted, cpioEntry{Name: "TRAILER!!!"}) {
		ino := uint32(i + 1)
		if i == len(sorted) {
			ino = 0
		}
		nlink := uint32(1)
		if e.Mode&0o170000 == modeDir {
			nlink = 2
		}
		name := e.Name + "\x00"
		fmt.Fprintf(&b, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s",
			ino, e.Mode, 0, 0, nlink, 0, len(e.Data), 0, 0, e.DevMajor, e.DevMinor, len(name), 0, name)
		pad4()
		b.Write(e.Data)
		pad4()
	}
	return b.Bytes()
}
