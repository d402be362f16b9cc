package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCgroupMounts(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo string
		want            []cgroupMount
	}{
		{
			name:      "v2",
			mountinfo: "23 22 0:21 / /sys rw - sysfs sysfs rw\n30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			want:      []cgroupMount{{point: "/sys/fs/cgroup", fstype: "cgroup2"}},
		},
		{
			name: "hybrid",
			mountinfo: "25 23 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n" +
				"26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:5 - cgroup2 cgroup2 rw,nsdelegate\n" +
				"27 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid shared:6 - cgroup cgroup rw,xattr,name=systemd\n" +
				"31 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct\n",
			want: []cgroupMount{
				{point: "/sys/fs/cgroup/unified", fstype: "cgroup2"},
				{point: "/sys/fs/cgroup/systemd", fstype: "cgroup", data: "xattr,name=systemd"},
				{point: "/sys/fs/cgroup/cpu,cpuacct", fstype: "cgroup", data: "cpu,cpuacct"},
			},
		},
	} {
		got, err := parseCgroupMounts(tc.mountinfo)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(cgroupMount{})); diff != "" {
			t.Errorf("%s: parseCgroupMounts (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := parseCgroupMounts("23 22 0:21 / /sys rw - sysfs sysfs rw\n"); err == nil {
		t.Errorf("parseCgroupMounts without a cgroup mount: no error")
	}
}
