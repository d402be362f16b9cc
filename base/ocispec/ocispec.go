// Package ocispec builds the OCI bundles cases run: a generated base spec
// with a busybox rootfs, and the merge of a case's spec fragment onto it.
package ocispec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Base returns the spec every sandbox starts from: busybox sleeping, no
// terminal, the namespaces every runtime under test supports, and an
// explicit empty cgroupsPath (cases set it).
func Base(rootfs string) *specs.Spec {
	return &specs.Spec{
		// 1.0.2: the newest version every runtime under test accepts (crun
		// 1.8.1 refuses "unknown version" for 1.2.x).
		Version: "1.0.2",
		Root:    &specs.Root{Path: rootfs, Readonly: true},
		Process: &specs.Process{
			User: specs.User{UID: 0, GID: 0},
			Args: []string{"/bin/sleep", "100000"},
			Env:  []string{"PATH=/bin:/usr/bin:/sbin:/usr/sbin"},
			Cwd:  "/",
			Capabilities: &specs.LinuxCapabilities{
				Bounding:  defaultCaps,
				Effective: defaultCaps,
				Permitted: defaultCaps,
			},
			NoNewPrivileges: true,
		},
		Hostname: "cgconform",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.MountNamespace},
				{Type: specs.NetworkNamespace},
			},
			MaskedPaths:   []string{"/proc/kcore", "/proc/keys", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

var defaultCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_NET_BIND_SERVICE"}

// Merge applies fragment (its variables already expanded: casefile's
// Sandbox.Expanded) onto base: objects merge key by key, everything else
// (arrays included) replaces; a JSON null deletes the key. The result is
// decoded back into runtime-spec's types, so a fragment cannot smuggle in
// unknown fields.
func Merge(base *specs.Spec, fragment json.RawMessage) (*specs.Spec, error) {
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	var dst map[string]any
	if err := json.Unmarshal(b, &dst); err != nil {
		return nil, err
	}
	if len(fragment) > 0 {
		var src any
		if err := json.Unmarshal(fragment, &src); err != nil {
			return nil, fmt.Errorf("spec fragment: %w", err)
		}
		srcMap, ok := src.(map[string]any)
		if !ok && src != nil {
			return nil, fmt.Errorf("spec fragment must be an object, got %T", src)
		}
		mergeMaps(dst, srcMap)
	}
	out, err := json.Marshal(dst)
	if err != nil {
		return nil, err
	}
	var s specs.Spec
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("merged spec does not decode as runtime-spec: %w", err)
	}
	return &s, nil
}

func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sOK := v.(map[string]any)
		dm, dOK := dst[k].(map[string]any)
		if sOK && dOK {
			mergeMaps(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// WriteBundle writes config.json for s into dir.
func WriteBundle(dir string, s *specs.Spec) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
}

// Applets linked into the rootfs. busybox must be static: the rootfs holds
// nothing else.
var Applets = []string{"sh", "sleep", "cat", "ls", "echo", "true", "false", "mkdir", "timeout", "yes", "ps", "kill", "dd", "head", "wc"}

// BuildRootfs makes a busybox rootfs in dir from the static busybox binary.
func BuildRootfs(dir, busybox string) error {
	for _, d := range []string{"bin", "proc", "dev", "sys", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	src, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("reading busybox (install busybox-static, or pass -busybox): %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), src, 0o755); err != nil {
		return err
	}
	for _, a := range Applets {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", a)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}
