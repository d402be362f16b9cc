package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// MakeRootfs puts a static busybox and the few links the sandboxes use into
// dir/rootfs and returns that path. All bundles share it, read-only.
func MakeRootfs(dir, busybox string) (string, error) {
	rootfs := filepath.Join(dir, "rootfs")
	bin := filepath.Join(rootfs, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		return "", fmt.Errorf("reading busybox for the sandbox rootfs (install busybox-static or pass -busybox): %w", err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), data, 0o755); err != nil {
		return "", err
	}
	for _, l := range []string{"sh", "sleep", "true"} {
		p := filepath.Join(bin, l)
		os.Remove(p)
		if err := os.Symlink("busybox", p); err != nil {
			return "", err
		}
	}
	for _, d := range []string{"proc", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return "", err
		}
	}
	return rootfs, nil
}

// The few parts of an OCI runtime config a busybox sandbox needs. Written by
// hand to keep the benchmark free of extra modules.
type ociConfig struct {
	OCIVersion string     `json:"ociVersion"`
	Process    ociProcess `json:"process"`
	Root       ociRoot    `json:"root"`
	Hostname   string     `json:"hostname"`
	Mounts     []ociMount `json:"mounts"`
	Linux      ociLinux   `json:"linux"`
}

type ociProcess struct {
	User struct {
		UID int `json:"uid"`
		GID int `json:"gid"`
	} `json:"user"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string `json:"destination"`
	Type        string `json:"type"`
	Source      string `json:"source"`
}

type ociNamespace struct {
	Type string `json:"type"`
}

type ociLinux struct {
	CgroupsPath string         `json:"cgroupsPath,omitempty"`
	Namespaces  []ociNamespace `json:"namespaces"`
}

// WriteBundle writes dir/config.json for a sandbox that sleeps until it is
// deleted, on rootfs, in cgroupsPath ("" leaves the choice to the runtime).
func WriteBundle(dir, rootfs, cgroupsPath string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := ociConfig{
		OCIVersion: "1.0.0",
		Process: ociProcess{
			Args: []string{"/bin/sleep", "3600"},
			Env:  []string{"PATH=/bin"},
			Cwd:  "/",
		},
		Root:     ociRoot{Path: rootfs, Readonly: true},
		Hostname: "cgbench",
		Mounts:   []ociMount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux: ociLinux{
			CgroupsPath: cgroupsPath,
			Namespaces:  []ociNamespace{{"pid"}, {"mount"}, {"ipc"}, {"uts"}},
		},
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}
