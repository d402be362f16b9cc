package vmimage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/runsc-cgroups/cgconform/ci/vmrun"
)

// Each layout's kernel command line and disks, as the matrix boots them:
// the payload's device must be the one cgm-run mounts.
func TestBootVM(t *testing.T) {
	for _, tc := range []struct {
		name, mode, debian string
		kernelArgs         []string
		initrd, cmdline    string
		disks              []vmrun.Disk
	}{
		{name: "busybox", mode: "v2", initrd: "/base",
			cmdline: "console=ttyS0 panic=-1 loglevel=4 rdinit=/init cgm.payload=/dev/nvme0n1 cgm.mode=v2",
			disks:   []vmrun.Disk{{Path: "/p.ext4"}}},
		{name: "busybox with Debian", mode: "hybrid", debian: "/debian.ext4", kernelArgs: []string{"loglevel=7", "x=1"}, initrd: "/base",
			cmdline: "console=ttyS0 panic=-1 loglevel=4 rdinit=/init cgm.payload=/dev/nvme0n2 cgm.debian=/dev/nvme0n1 cgm.mode=hybrid loglevel=7 x=1",
			disks:   []vmrun.Disk{{Path: "/debian.ext4", Snapshot: true}, {Path: "/p.ext4"}}},
		{name: "systemd", mode: "systemd-v1", debian: "/debian.ext4", kernelArgs: []string{"a=b"},
			cmdline: "console=ttyS0 panic=-1 loglevel=4 root=/dev/nvme0n1 rw rootfstype=ext4 systemd.show_status=0 quiet cgm.payload=/dev/nvme0n2 cgm.mode=systemd-v1 systemd.unified_cgroup_hierarchy=0 a=b",
			disks:   []vmrun.Disk{{Path: "/base", Snapshot: true}, {Path: "/p.ext4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ModeByName(tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			b := &Boot{Mode: m, Kernel: "/vmlinuz", Base: "/base", Debian: tc.debian, KernelArgs: tc.kernelArgs,
				CPUs: 3, MemoryMiB: 1234, KVM: true, Timeout: time.Hour, Dir: "/out/v2"}
			vm := b.VM("/p.ext4")
			if vm.Initrd != tc.initrd {
				t.Errorf("initrd %q, want %q", vm.Initrd, tc.initrd)
			}
			if vm.Cmdline != tc.cmdline {
				t.Errorf("cmdline\n %q, want\n %q", vm.Cmdline, tc.cmdline)
			}
			if diff := cmp.Diff(tc.disks, vm.Disks); diff != "" {
				t.Errorf("disks (-want +got):\n%s", diff)
			}
			if vm.Kernel != "/vmlinuz" || vm.CPUs != 3 || vm.MemoryMiB != 1234 || !vm.KVM || vm.Timeout != time.Hour ||
				vm.ConsoleLog != "/out/v2/console.log" || vm.ReportPath != "/out/v2/serial-report.txt" {
				t.Errorf("vm %+v", vm)
			}
			if vm.Watchdog != nil {
				t.Error("a watchdog without a stall bound")
			}
			b.Stall = func(string) time.Duration { return time.Minute }
			if w := b.VM("/p.ext4").Watchdog; w == nil || w.Bound("x") != time.Minute {
				t.Errorf("watchdog %+v, want one with the stall bound", w)
			}
		})
	}
}

// fakeQEMU writes a qemu that prints a boot, copies frame (if any) to the
// second serial port and exits.
func fakeQEMU(t *testing.T, frame string) string {
	t.Helper()
	q := filepath.Join(t.TempDir(), "qemu")
	script := "#!/bin/sh\nfor a; do case \"$a\" in file:*) r=${a#file:};; esac; done\necho 'cgm: start'\n"
	if frame != "" {
		script += "cp '" + frame + "' \"$r\"\n"
	}
	if err := os.WriteFile(q, []byte(script+"echo 'cgm: powering off'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return q
}

func TestBootRun(t *testing.T) {
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("needs mke2fs and debugfs (apt-get install e2fsprogs)")
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "cgbench"), []byte("#!/bin/sh\n"), 0o755)
	staged, err := Payload{Bins: map[string]string{"cgbench": filepath.Join(src, "cgbench")}, Command: "cgbench\n"}.Stage(filepath.Join(t.TempDir(), "stage"))
	if err != nil {
		t.Fatal(err)
	}
	frame := filepath.Join(t.TempDir(), "frame")
	f, _ := os.Create(frame)
	vmrun.EncodeFrame(f, resultsArchive(t))
	f.Close()
	m, _ := ModeByName("v2")

	t.Run("results", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "v2")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "stale"), nil, 0o644)
		var lines []string
		b := &Boot{Mode: m, Kernel: "/k", Base: "/initrd", Dir: dir, QEMU: fakeQEMU(t, frame), Timeout: time.Minute,
			OnLine: func(l string) { lines = append(lines, l) }}
		got, err := b.Run(context.Background(), staged)
		if err != nil {
			t.Fatal(err)
		}
		if got.RunErr != nil || got.CollectErr != nil || got.Result == nil {
			t.Fatalf("run %v, collect %v, result %+v", got.RunErr, got.CollectErr, got.Result)
		}
		if !strings.Contains(string(got.Files["report.json"]), "cgconform/report/v1") {
			t.Errorf("files %v, want the report sent", got.Files)
		}
		if _, err := os.Stat(filepath.Join(dir, "stale")); err == nil {
			t.Error("Run left the old contents of Dir")
		}
		args, _ := os.ReadFile(filepath.Join(dir, "qemu-args.txt"))
		if want := strings.Join(b.VM(got.Disk).Args(), "\n") + "\n"; string(args) != want || !strings.Contains(want, got.Disk) {
			t.Errorf("qemu-args.txt = %q, want %q with the payload disk", args, want)
		}
		if got.Disk != filepath.Join(dir, "payload.ext4") {
			t.Errorf("payload disk %s", got.Disk)
		}
		dest := filepath.Join(t.TempDir(), "command")
		if err := ExtractFromDisk(context.Background(), got.Disk, "/command", dest); err != nil {
			t.Fatal(err)
		}
		if cmd, _ := os.ReadFile(dest); string(cmd) != "cgbench\n" {
			t.Errorf("payload /command = %q", cmd)
		}
		if diff := cmp.Diff([]string{"cgm: start", "cgm: powering off"}, lines); diff != "" {
			t.Errorf("console lines (-want +got):\n%s", diff)
		}
	})
	t.Run("no results", func(t *testing.T) {
		b := &Boot{Mode: m, Kernel: "/k", Base: "/initrd", Dir: filepath.Join(t.TempDir(), "v2"), QEMU: fakeQEMU(t, ""), Timeout: time.Minute}
		got, err := b.Run(context.Background(), staged)
		if err != nil || got.RunErr != nil {
			t.Fatal(err, got.RunErr)
		}
		if got.Files != nil || got.CollectErr == nil || !strings.Contains(got.CollectErr.Error(), "did not get to copy its results") {
			t.Errorf("files %v, collect error %v: want none and why", got.Files, got.CollectErr)
		}
	})
	t.Run("no qemu", func(t *testing.T) {
		b := &Boot{Mode: m, Kernel: "/k", Base: "/initrd", Dir: filepath.Join(t.TempDir(), "v2"), QEMU: "/nonexistent/qemu", Timeout: time.Minute}
		got, err := b.Run(context.Background(), staged)
		if err != nil || got.RunErr == nil || got.Files != nil || got.CollectErr != nil {
			t.Errorf("err %v, run %v, files %v, collect %v: want the run's error only", err, got.RunErr, got.Files, got.CollectErr)
		}
	})
}
