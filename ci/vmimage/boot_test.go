package vmimage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
)

// TestSetup: each way a mode boots, as the guest's init reads it (the
// payload's and Debian's devices named on the command line).
func TestSetup(t *testing.T) {
	for _, tc := range []struct {
		mode, debian string
		initrd       string
		disks        []vmrun.Disk
		cmdline      string
	}{
		{mode: "v2", initrd: "/base", disks: []vmrun.Disk{{Path: "/payload.ext4"}},
			cmdline: "console=ttyS0 panic=-1 loglevel=4 rdinit=/init cgm.payload=/dev/nvme0n1 cgm.mode=v2 extra=1"},
		{mode: "v1", debian: "/debian.img", initrd: "/base", disks: []vmrun.Disk{{Path: "/debian.img", Snapshot: true}, {Path: "/payload.ext4"}},
			cmdline: "console=ttyS0 panic=-1 loglevel=4 rdinit=/init cgm.payload=/dev/nvme0n2 cgm.debian=/dev/nvme0n1 cgm.mode=v1 extra=1"},
		{mode: "systemd-v1", debian: "/debian.img", disks: []vmrun.Disk{{Path: "/base", Snapshot: true}, {Path: "/payload.ext4"}},
			cmdline: "console=ttyS0 panic=-1 loglevel=4 root=/dev/nvme0n1 rw rootfstype=ext4 systemd.show_status=0 quiet cgm.payload=/dev/nvme0n2 cgm.mode=systemd-v1 systemd.unified_cgroup_hierarchy=0 extra=1"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			m, err := ModeByName(tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			var vm vmrun.VM
			Setup(&vm, m, "/base", tc.debian, "/payload.ext4", "extra=1")
			if vm.Initrd != tc.initrd {
				t.Errorf("initrd %q, want %q", vm.Initrd, tc.initrd)
			}
			if diff := cmp.Diff(tc.disks, vm.Disks); diff != "" {
				t.Errorf("disks (-want +got):\n%s", diff)
			}
			if vm.Cmdline != tc.cmdline {
				t.Errorf("cmdline\n %q\nwant\n %q", vm.Cmdline, tc.cmdline)
			}
		})
	}
}
