package vmimage

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/mounts"
)

// Builder makes and caches the images.
type Builder struct {
	CacheDir  string    // e.g. out/cache/vm; big, git-ignored
	KernelPkg string    // Debian package holding the kernel
	Suite     string    // Debian suite for debootstrap
	Mirror    string    // Debian mirror for debootstrap
	Log       io.Writer // progress lines
}

// DefaultKernelPkg is the cloud kernel the matrix boots: it has NVMe, ext4,
// every cgroup controller and the 8250 console built in, so neither image
// needs kernel modules.
const DefaultKernelPkg = "linux-image-6.1.0-50-cloud-amd64"

// systemdPackages go into the systemd image on top of debootstrap's minbase.
// Docker (docker.io 20.10 with containerd 1.6) and Podman 4.3 are the real
// clients the harness's docker and podman contexts start themselves; their
// units are masked. The busybox modes use this disk's /usr for them too
// (files/init). containernetworking-plugins picks podman's network stack
// (a virtual package debootstrap cannot choose); apparmor is docker.io's
// recommendation, without which dockerd refuses every container on a
// kernel with AppArmor on (the systemd modes mount securityfs). strace runs
// the killsweep cases' creates (kill: {syscall}), in the busybox modes too.
var systemdPackages = []string{"systemd", "systemd-sysv", "dbus", "busybox-static", "runc", "crun", "ca-certificates",
	"docker.io", "podman", "containernetworking-plugins", "apparmor", "strace"}

// maskedUnits would start Debian's own daemons at boot, with the default
// roots the harness's contexts keep away from.
var maskedUnits = []string{"docker.service", "docker.socket", "containerd.service", "podman.service", "podman.socket", "podman-restart.service", "podman-auto-update.timer"}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", args...)
	}
}

// run executes a command, returning its combined output in the error.
func run(ctx context.Context, dir string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tail := out.String()
		if len(tail) > 2000 {
			tail = "…" + tail[len(tail)-2000:]
		}
		return out.Bytes(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail)
	}
	return out.Bytes(), nil
}

// AptVersions asks apt which versions of pkgs it would install (one
// apt-cache call), so package versions become part of an image's hash.
func AptVersions(ctx context.Context, pkgs ...string) (map[string]string, error) {
	out, err := run(ctx, "", "apt-cache", append([]string{"show", "--no-all-versions"}, pkgs...)...)
	if err != nil {
		return nil, fmt.Errorf("looking up %s with apt-cache (run apt-get update?): %w", strings.Join(pkgs, " "), err)
	}
	return parseAptVersions(out, pkgs)
}

// parseAptVersions reads the Package:/Version: pairs of apt-cache show.
func parseAptVersions(out []byte, pkgs []string) (map[string]string, error) {
	vs := map[string]string{}
	var pkg string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Package: "); ok {
			pkg = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Version: "); ok && pkg != "" {
			if _, seen := vs[pkg]; !seen {
				vs[pkg] = strings.TrimSpace(v)
			}
		}
	}
	for _, p := range pkgs {
		if vs[p] == "" {
			return nil, fmt.Errorf("apt-cache show printed no version of %s; is the package name right (apt-get update?)", p)
		}
	}
	return vs, nil
}

// Kernel returns the path of the cached vmlinuz, downloading and unpacking
// the kernel package on first use.
func (b *Builder) Kernel(ctx context.Context) (string, error) {
	pkg := cmp.Or(b.KernelPkg, DefaultKernelPkg)
	vs, err := AptVersions(ctx, pkg)
	if err != nil {
		return "", err
	}
	ver := vs[pkg]
	dir := filepath.Join(b.CacheDir, "kernel", pkg+"_"+ver)
	final := filepath.Join(dir, "vmlinuz")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	b.logf("image: downloading %s=%s", pkg, ver)
	tmp, err := os.MkdirTemp(b.CacheDir, "kernel-tmp-")
	if err != nil {
		return "", fmt.Errorf("making a temp folder in the cache %s: %w", b.CacheDir, err)
	}
	defer os.RemoveAll(tmp)
	if _, err := run(ctx, tmp, "apt-get", "download", pkg+"="+ver); err != nil {
		return "", fmt.Errorf("downloading the kernel: %w", err)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %d .deb files in %s, want 1", pkg, len(debs), tmp)
	}
	x := filepath.Join(tmp, "x")
	if _, err := run(ctx, tmp, "dpkg-deb", "-x", debs[0], x); err != nil {
		return "", fmt.Errorf("unpacking the kernel package: %w", err)
	}
	vmlinuz, _ := filepath.Glob(filepath.Join(x, "boot", "vmlinuz-*"))
	if len(vmlinuz) != 1 {
		return "", fmt.Errorf("kernel package %s holds %d boot/vmlinuz-* files, want 1", pkg, len(vmlinuz))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	configs, _ := filepath.Glob(filepath.Join(x, "boot", "config-*"))
	for _, c := range configs {
		_ = os.Rename(c, filepath.Join(dir, "config"))
	}
	if err := os.Rename(vmlinuz[0], final); err != nil {
		return "", fmt.Errorf("storing the kernel in the cache: %w", err)
	}
	return final, nil
}

// hostFile is a binary copied from the build host into the busybox image.
type hostFile struct {
	Path string // where it lives on the host and in the image
	Data []byte
}

// hostBinaryWithLibs reads a host binary and the shared libraries ldd names
// for it (runc and crun are dynamically linked on Debian).
func hostBinaryWithLibs(ctx context.Context, name string) ([]hostFile, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s is not installed on the build host (apt-get install %s): %w", name, name, err)
	}
	path, err = filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	out, err := run(ctx, "", "ldd", path)
	if err == nil {
		paths = append(paths, parseLdd(out)...)
	} else if !bytes.Contains(out, []byte("not a dynamic executable")) {
		return nil, fmt.Errorf("listing the libraries of %s: %w", path, err)
	}
	var files []hostFile
	for _, p := range paths {
		data, err := os.ReadFile(p) // follows the library's symlink
		if err != nil {
			return nil, fmt.Errorf("reading %s for the image: %w", p, err)
		}
		files = append(files, hostFile{Path: p, Data: data})
	}
	return files, nil
}

// parseLdd extracts absolute library paths from ldd's output.
func parseLdd(out []byte) []string {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		}
	}
	return libs
}

// BusyboxInitramfs returns the cached base initramfs of the v1, hybrid and v2
// modes: busybox with its applet links, /init, runc and crun with their
// libraries.
func (b *Builder) BusyboxInitramfs(ctx context.Context) (string, error) {
	r := NewRecipe("busybox-initramfs")
	r.Add("file:init", mustFile("init"))
	bbPath, err := exec.LookPath("busybox")
	if err != nil {
		return "", fmt.Errorf("busybox is not installed (apt-get install busybox-static): %w", err)
	}
	bb, err := os.ReadFile(bbPath)
	if err != nil {
		return "", err
	}
	r.Add("bin:busybox", bb)
	var extra []hostFile
	for _, name := range []string{"runc", "crun"} {
		fs, err := hostBinaryWithLibs(ctx, name)
		if err != nil {
			return "", err
		}
		for _, f := range fs {
			r.Add("host:"+f.Path, f.Data)
		}
		extra = append(extra, fs...)
	}
	final := filepath.Join(b.CacheDir, "busybox-"+r.Hash(), "initramfs.cpio")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	b.logf("image: building busybox initramfs %s", r.Hash())
	applets, err := run(ctx, "", bbPath, "--list-full")
	if err != nil {
		return "", fmt.Errorf("listing busybox applets: %w", err)
	}
	entries := busyboxEntries(bb, mustFile("init"), strings.Fields(string(applets)), extra)
	if err := writeCached(final, cpioArchive(entries), r); err != nil {
		return "", err
	}
	return final, nil
}

// busyboxEntries lays out the initramfs tree.
func busyboxEntries(busybox, init []byte, applets []string, extra []hostFile) []cpioEntry {
	dirs := map[string]bool{}
	addDir := func(p string) {
		for p != "." && p != "/" && p != "" {
			dirs[p] = true
			p = filepath.Dir(p)
		}
	}
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "tmp", "run", "root", "var/tmp", "payload"} {
		addDir(d)
	}
	entries := []cpioEntry{
		{Name: "init", Mode: modeFile | 0o755, Data: init},
		{Name: "bin/busybox", Mode: modeFile | 0o755, Data: busybox},
		{Name: "dev/console", Mode: modeChar | 0o600, DevMajor: 5, DevMinor: 1},
		{Name: "dev/null", Mode: modeChar | 0o666, DevMajor: 1, DevMinor: 3},
		{Name: "etc/passwd", Mode: modeFile | 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{Name: "etc/group", Mode: modeFile | 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	seen := map[string]bool{"init": true, "bin/busybox": true}
	for _, f := range extra {
		name := strings.TrimPrefix(filepath.Clean(f.Path), "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		addDir(filepath.Dir(name))
		entries = append(entries, cpioEntry{Name: name, Mode: modeFile | 0o755, Data: f.Data})
	}
	for _, a := range applets {
		name := strings.TrimPrefix(a, "/")
		if seen[name] || !strings.Contains(name, "/") {
			continue
		}
		seen[name] = true
		addDir(filepath.Dir(name))
		rel, err := filepath.Rel(filepath.Dir(a), "/bin/busybox")
		if err != nil {
			rel = "/bin/busybox"
		}
		entries = append(entries, cpioEntry{Name: name, Mode: modeSymlink | 0o777, Data: []byte(rel)})
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		mode := uint32(0o755)
		if d == "tmp" || d == "var/tmp" {
			mode = 0o1777
		}
		entries = append(entries, cpioEntry{Name: d, Mode: modeDir | mode})
	}
	return entries
}

// writeCached stores data at final atomically, with the recipe's manifest.
func writeCached(final string, data []byte, r *Recipe) error {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("making cache folder: %w", err)
	}
	if err := os.WriteFile(final+".tmp", data, 0o644); err != nil {
		return err
	}
	return storeCached(final+".tmp", final, r)
}

// storeCached moves the image tmp to final with the recipe's manifest.
func storeCached(tmp, final string, r *Recipe) error {
	if err := os.WriteFile(filepath.Join(filepath.Dir(final), "MANIFEST"), []byte(r.Manifest()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// SystemdDisk returns the cached ext4 root disk of the systemd modes; both
// boot the same disk (read-only, qemu snapshot) with different kernel
// arguments.
func (b *Builder) SystemdDisk(ctx context.Context) (string, error) {
	suite, mirror := cmp.Or(b.Suite, "bookworm"), cmp.Or(b.Mirror, "http://deb.debian.org/debian")
	r := NewRecipe("systemd-disk")
	r.AddString("suite", suite)
	r.AddString("mirror", mirror)
	r.AddString("packages", strings.Join(systemdPackages, ","))
	r.AddString("masked", strings.Join(maskedUnits, ","))
	vs, err := AptVersions(ctx, systemdPackages...)
	if err != nil {
		return "", err
	}
	for _, p := range systemdPackages {
		r.AddString("version:"+p, vs[p])
	}
	for _, f := range []string{"cgm-boot", "cgm-payload.service"} {
		r.Add("file:"+f, mustFile(f))
	}
	dir := filepath.Join(b.CacheDir, "systemd-"+r.Hash())
	final := filepath.Join(dir, "root.ext4")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("making cache folder: %w", err)
	}
	tree := filepath.Join(dir, "tree")
	if err := removeTree(tree); err != nil {
		return "", err
	}
	start := time.Now()
	b.logf("image: debootstrap %s (minbase + %s) into %s", suite, strings.Join(systemdPackages, ","), tree)
	_, err = run(ctx, "", "debootstrap", "--variant=minbase", "--include="+strings.Join(systemdPackages, ","), suite, tree, mirror)
	// debootstrap mounts /proc and /sys inside the tree and leaves them on
	// failure; never leave a mount behind, never delete through one.
	if uerr := unmountUnder(tree); uerr != nil {
		return "", errors.Join(err, uerr)
	}
	if err != nil {
		return "", fmt.Errorf("debootstrap failed (network to %s? see the output): %w", mirror, err)
	}
	b.logf("image: debootstrap took %s", time.Since(start).Round(time.Second))
	if err := configureSystemdTree(tree); err != nil {
		return "", err
	}
	tmp := final + ".tmp"
	os.Remove(tmp)
	if _, err := run(ctx, "", "mke2fs", "-q", "-F", "-t", "ext4", "-L", "cgm-root", "-d", tree, tmp, "2G"); err != nil {
		return "", fmt.Errorf("making the ext4 image from %s: %w", tree, err)
	}
	if err := removeTree(tree); err != nil {
		return "", err
	}
	if err := storeCached(tmp, final, r); err != nil {
		return "", err
	}
	b.logf("image: systemd disk ready in %s", time.Since(start).Round(time.Second))
	return final, nil
}

// configureSystemdTree installs the payload unit and quietens the console.
func configureSystemdTree(tree string) error {
	write := func(rel string, data []byte, mode os.FileMode) error {
		p := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, mode)
	}
	link := func(target, rel string) error {
		p := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		os.Remove(p)
		return os.Symlink(target, p)
	}
	steps := []error{
		write("usr/local/sbin/cgm-boot", mustFile("cgm-boot"), 0o755),
		write("etc/systemd/system/cgm-payload.service", mustFile("cgm-payload.service"), 0o644),
		link("/etc/systemd/system/cgm-payload.service", "etc/systemd/system/multi-user.target.wants/cgm-payload.service"),
		// The console belongs to the payload: no login prompts on it.
		link("/dev/null", "etc/systemd/system/serial-getty@ttyS0.service"),
		link("/dev/null", "etc/systemd/system/getty@tty1.service"),
		write("etc/hostname", []byte("cgm-vm\n"), 0o644),
		write("etc/fstab", []byte("# root is mounted rw by the kernel; the payload by cgm-boot\n"), 0o644),
		write("etc/machine-id", nil, 0o444),
	}
	for _, u := range maskedUnits {
		steps = append(steps, link("/dev/null", "etc/systemd/system/"+u))
	}
	if err := errors.Join(steps...); err != nil {
		return fmt.Errorf("configuring the systemd tree %s: %w", tree, err)
	}
	// Downloaded packages only make the image bigger.
	debs, _ := filepath.Glob(filepath.Join(tree, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		os.Remove(d)
	}
	return nil
}

// unmountUnder lazily unmounts every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	if _, err := mounts.Detach(dir); err != nil {
		return fmt.Errorf("%w (left by debootstrap; umount -l it by hand)", err)
	}
	return nil
}

// removeTree deletes a build tree, refusing while anything is mounted in it.
func removeTree(tree string) error {
	if err := unmountUnder(tree); err != nil {
		return err
	}
	m, err := mounts.Under(tree)
	if err != nil {
		return err
	}
	if len(m) > 0 {
		return fmt.Errorf("refusing to delete %s: %s is still mounted", tree, m[0])
	}
	return os.RemoveAll(tree)
}
