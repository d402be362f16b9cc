package vmimage

import (
	"bytes"
	"strconv"
	"testing"
)

// readCPIO is a minimal newc reader: enough to check what cpioArchive wrote.
func readCPIO(t *testing.T, data []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	align := func() { off = (off + 3) &^ 3 }
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(data[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("bad header field %d at offset %d: %v", i, off, err)
		}
		return uint32(v)
	}
	for {
		if string(data[off:off+6]) != "070701" {
			t.Fatalf("bad magic at offset %d: %q", off, data[off:off+6])
		}
		mode, size, major, minor, nameLen := field(1), field(6), field(9), field(10), field(11)
		name := string(data[off+110 : off+110+int(nameLen)-1])
		off += 110 + int(nameLen)
		align()
		body := data[off : off+int(size)]
		off += int(size)
		align()
		if name == "TRAILER!!!" {
			if off != len(data) {
				t.Errorf("%d bytes after the trailer", len(data)-off)
			}
			return out
		}
		out = append(out, cpioEntry{Name: name, Mode: mode, Data: body, DevMajor: major, DevMinor: minor})
	}
}

func TestWriteCPIO(t *testing.T) {
	in := []cpioEntry{
		{Name: "init", Mode: modeFile | 0o755, Data: []byte("#!/bin/sh\n")},
		{Name: "bin/sh", Mode: modeSymlink | 0o777, Data: []byte("busybox")},
		{Name: "dev/console", Mode: modeChar | 0o600, DevMajor: 5, DevMinor: 1},
		{Name: "bin", Mode: modeDir | 0o755},
		{Name: "dev", Mode: modeDir | 0o755},
	}
	a, b := cpioArchive(in), cpioArchive(in)
	if !bytes.Equal(a, b) {
		t.Error("the same entries gave different archives")
	}
	got := readCPIO(t, a)
	want := []string{"bin", "bin/sh", "dev", "dev/console", "init"}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Name != want[i] {
			t.Errorf("entry %d is %q, want %q (parents before children)", i, e.Name, want[i])
		}
		if e.Name == "dev/console" && (e.Mode != modeChar|0o600 || e.DevMajor != 5 || e.DevMinor != 1) {
			t.Errorf("dev/console = mode %o dev %d:%d, want char 5:1", e.Mode, e.DevMajor, e.DevMinor)
		}
		if e.Name == "init" && string(e.Data) != "#!/bin/sh\n" {
			t.Errorf("init body = %q", e.Data)
		}
	}
}

func TestBusyboxEntries(t *testing.T) {
	entries := busyboxEntries([]byte("BB"), []byte("INIT"), []string{"/bin/sh", "/usr/sbin/chroot", "/bin/busybox"},
		[]hostFile{{Path: "/usr/sbin/runc", Data: []byte("R")}, {Path: "/lib64/ld-linux-x86-64.so.2", Data: []byte("L")}})
	byName := map[string]cpioEntry{}
	for _, e := range entries {
		if _, dup := byName[e.Name]; dup {
			t.Errorf("duplicate entry %q", e.Name)
		}
		byName[e.Name] = e
	}
	for name, check := range map[string]func(e cpioEntry) bool{
		"init":                       func(e cpioEntry) bool { return string(e.Data) == "INIT" && e.Mode&0o111 != 0 },
		"dev/console":                func(e cpioEntry) bool { return e.Mode&0o170000 == modeChar },
		"bin/sh":                     func(e cpioEntry) bool { return string(e.Data) == "busybox" },
		"usr/sbin/chroot":            func(e cpioEntry) bool { return string(e.Data) == "../../bin/busybox" },
		"usr/sbin/runc":              func(e cpioEntry) bool { return string(e.Data) == "R" },
		"lib64/ld-linux-x86-64.so.2": func(e cpioEntry) bool { return string(e.Data) == "L" },
		"lib64":                      func(e cpioEntry) bool { return e.Mode&0o170000 == modeDir },
		"tmp":                        func(e cpioEntry) bool { return e.Mode == modeDir|0o1777 },
	} {
		e, ok := byName[name]
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		if !check(e) {
			t.Errorf("%s is wrong: mode %o data %q", name, e.Mode, e.Data)
		}
	}
	if string(byName["bin/busybox"].Data) != "BB" {
		t.Error("the busybox applet list overwrote bin/busybox itself")
	}
}
