package vmimage

import (
	"fmt"
	"io"
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

// writeCPIO writes entries sorted by name (so parents come before children)
// and the trailer.
func writeCPIO(w io.Writer, entries []cpioEntry) error {
	sorted := append([]cpioEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	cw := &countingWriter{w: w}
	for i, e := range sorted {
		if err := writeCPIOEntry(cw, uint32(i+1), e); err != nil {
			return fmt.Errorf("writing cpio member %q: %w", e.Name, err)
		}
	}
	return writeCPIOEntry(cw, 0, cpioEntry{Name: "TRAILER!!!"})
}

func writeCPIOEntry(cw *countingWriter, ino uint32, e cpioEntry) error {
	name := e.Name + "\x00"
	nlink := uint32(1)
	if e.Mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.Mode, 0, 0, nlink, 0, len(e.Data), 0, 0, e.DevMajor, e.DevMinor, len(name), 0)
	if _, err := io.WriteString(cw, hdr+name); err != nil {
		return err
	}
	if err := cw.pad4(); err != nil {
		return err
	}
	if _, err := cw.Write(e.Data); err != nil {
		return err
	}
	return cw.pad4()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// pad4 aligns the stream to four bytes, as newc requires after each header
// and each file body.
func (c *countingWriter) pad4() error {
	if r := c.n % 4; r != 0 {
		_, err := c.Write(make([]byte, 4-r))
		return err
	}
	return nil
}
