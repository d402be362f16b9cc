package bench

import (
	"path/filepath"

	"github.com/runsc-cgroups/cgconform/base/ocispec"
)

// MakeRootfs puts the harness's busybox rootfs into dir/rootfs and returns
// that path. All bundles share it, read-only.
func MakeRootfs(dir, busybox string) (string, error) {
	rootfs := filepath.Join(dir, "rootfs")
	return rootfs, ocispec.BuildRootfs(rootfs, busybox)
}

// WriteBundle writes dir/config.json for a sandbox that sleeps until it is
// deleted, on rootfs, in cgroupsPath ("" leaves the choice to the runtime):
// the harness's base spec (runtime-spec's own types), as every case starts
// from.
func WriteBundle(dir, rootfs, cgroupsPath string) error {
	s := ocispec.Base(rootfs)
	s.Process.Args = []string{"/bin/sleep", "3600"}
	s.Linux.CgroupsPath = cgroupsPath
	return ocispec.WriteBundle(dir, s)
}
