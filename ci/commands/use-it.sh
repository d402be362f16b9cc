# A -command script for the matrix (make use-it): the README's "Use it"
# snippets, each run as written (cmd/useit copies them to
# /payload/bin/useit-NAME.sh), from the release tarball in /payload/bin,
# in a systemd cgroup v2 VM; around each, what a user's machine would
# already have (a pod-like caller, an image) and a check of where the
# sandbox ran. One line per snippet in $CGM_OUT/result.txt; exits 1 on the
# first failure.
set -eu
P=/payload/bin
export PATH=/usr/local/bin:$PATH
say() { echo "use-it: $*" | tee -a "$CGM_OUT/result.txt"; }
fail() { say "FAIL $*"; exit 1; }
snippet() { sh -eux "$P/useit-$1.sh" || fail "$1: the snippet exited $?"; }
# cgroup_of PID: its cgroup v2 path.
cgroup_of() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }
sandbox_pid() { runsc --root /run/runsc state "$1" | sed -n 's/^ *"pid": *\([0-9]*\).*/\1/p'; }

# install: in a folder holding the tarball, as a user who downloaded it.
mkdir -p /tmp/release && cp $P/runsc-*-linux-amd64.tar.gz /tmp/release/
(cd /tmp/release && snippet install)
runsc --version | grep -q 'cgpatches\.' || fail "install: runsc --version names no series hash"
say "ok install: $(runsc --version | head -1)"

# A bundle for the snippets' runsc run (an OCI bundle the caller has).
mkdir -p /bundle/rootfs/bin
cp /bin/busybox /bundle/rootfs/bin/
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "/bundle/rootfs/bin/$a"; done
(cd /bundle && runsc spec -- /bin/sleep 1000 && sed -i 's/"terminal": true/"terminal": false/' config.json)

# leaf: the caller is a privileged pod's container: cgroup C with its main
# process, a cgroup namespace rooted at C and cgroup2 mounted from there.
# A kubelet's pod cgroup has every controller; systemd enables only what
# its units ask for.
sed 's/[a-z_]*/+&/g' /sys/fs/cgroup/cgroup.controllers >/sys/fs/cgroup/cgroup.subtree_control
C=/sys/fs/cgroup/pod-useit
mkdir $C
sleep 1000 &
echo $! > $C/cgroup.procs
sh -c "echo \$\$ > $C/cgroup.procs && exec unshare --cgroup --mount sh -c 'umount /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && sh -eux $P/useit-leaf.sh'" ||
	fail "leaf: the snippet exited $?"
pid=$(sandbox_pid actor-1)
cg=$(cgroup_of "$pid")
case $cg in
/pod-useit/supervisor*) fail "leaf: the sandbox ran in the caller's leaf ($cg)" ;;
/pod-useit/*) say "ok leaf: the sandbox runs in $cg, beneath the caller's /pod-useit" ;;
*) fail "leaf: the sandbox runs in $cg, not beneath the caller's /pod-useit" ;;
esac
runsc --root /run/runsc delete --force actor-1

# unprivileged: the caller's cgroupfs is mounted read-only.
U=/sys/fs/cgroup/unprivileged-useit
mkdir $U
sh -c "echo \$\$ > $U/cgroup.procs && exec unshare --mount sh -c 'mount -o remount,bind,ro /sys/fs/cgroup && sh -eux $P/useit-unprivileged.sh'" ||
	fail "unprivileged: the snippet exited $?"
pid=$(sandbox_pid actor-2)
cg=$(cgroup_of "$pid")
[ "$cg" = /unprivileged-useit ] || fail "unprivileged: the sandbox runs in $cg, not in the caller's /unprivileged-useit"
say "ok unprivileged: the sandbox runs in the caller's own $cg"
runsc --root /run/runsc delete --force actor-2

# docker and podman: the engine has a busybox image; the snippet runs one
# container; a second run proves the kernel was gVisor's. What a user's
# engines already have: the VM image masks Debian's daemons and has no
# overlay or bridge module and no network.
systemctl unmask docker.service docker.socket containerd.service >/dev/null
mkdir -p /etc/systemd/system/docker.service.d /etc/containers/containers.conf.d
printf '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd -H unix:///run/docker.sock --storage-driver=vfs --bridge=none --iptables=false\n' >/etc/systemd/system/docker.service.d/vm.conf
printf '[storage]\ndriver = "vfs"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' >/etc/containers/storage.conf
printf '[containers]\nnetns = "none"\n' >/etc/containers/containers.conf.d/00-vm.conf
systemctl daemon-reload
systemctl start docker || { journalctl -u docker.service --no-pager | tail -15; fail "docker: dockerd did not start in this VM"; }
tar -C /bundle/rootfs -c . | docker import - busybox >/dev/null
snippet docker
docker run --rm --runtime runsc busybox dmesg | grep -q gVisor || fail "docker: the container's kernel is not gVisor's"
say "ok docker: docker run --runtime runsc ran in gVisor"
tar -C /bundle/rootfs -c . | podman import - busybox >/dev/null
snippet podman
podman run --rm --runtime runsc busybox dmesg | grep -q gVisor || fail "podman: the container's kernel is not gVisor's"
say "ok podman: podman run --runtime runsc ran in gVisor"
# containerd: a node's containerd 2.x (make clients builds it) as the
# containerd unit, crictl pointed at it, and the sandbox (pause) image it
# would have pulled: the busybox image, sleeping.
pause=$($P/containerd config default | sed -n "s/^ *sandbox = '\(.*\)'/\1/p")
[ -n "$pause" ] || fail "containerd: its default config names no sandbox image"
tar -C /bundle/rootfs -c . | docker import --change 'CMD ["/bin/sleep", "1000000"]' - "$pause" >/dev/null
docker save -o /tmp/pause.tar "$pause"
systemctl stop docker.service docker.socket
install -m 0755 $P/containerd $P/ctr $P/crictl /usr/local/bin/
# Its default config written out, as containerd's getting-started guide
# has it (containerd reads the conf.d imports only from a config file),
# in place of the Debian 1.6 package's (version 2, no imports), which the
# image carries for Docker.
/usr/local/bin/containerd config default >/etc/containerd/config.toml
# No overlay module in this VM: the node's CRI uses the native snapshotter.
mkdir -p /etc/containerd/conf.d
printf "version = 3\n[plugins.'io.containerd.cri.v1.images']\n  snapshotter = 'native'\n[[plugins.'io.containerd.transfer.v1.local'.unpack_config]]\n  platform = 'linux/amd64'\n  snapshotter = 'native'\n" >/etc/containerd/conf.d/00-vm.toml
mkdir -p /etc/systemd/system/containerd.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/local/bin/containerd\n' >/etc/systemd/system/containerd.service.d/vm.conf
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' >/etc/crictl.yaml
systemctl daemon-reload
systemctl restart containerd || { journalctl -u containerd.service --no-pager | tail -15; fail "containerd: it did not start in this VM"; }
/usr/local/bin/ctr -n k8s.io images import --snapshotter native /tmp/pause.tar >/dev/null || fail "containerd: importing the sandbox image $pause"
mkdir -p /tmp/pod && cd /tmp/pod
snippet containerd
pod=$(crictl pods -q --name gvisor-pod)
[ -n "$pod" ] || fail "containerd: no pod gvisor-pod"
[ "$(crictl inspectp -o go-template --template '{{.status.runtimeHandler}}' "$pod")" = runsc ] || fail "containerd: the pod's handler is not runsc"
# The VM has no procps: the sandbox is the process whose argv[0] is
# runsc-sandbox and whose command line names the pod.
served=
for c in /proc/[0-9]*/cmdline; do
	case "$(tr '\0' ' ' <"$c" 2>/dev/null)" in *runsc-sandbox*"$pod"*) served=1 ;; esac
done
[ -n "$served" ] || fail "containerd: no runsc sandbox serves the pod $pod"
crictl stopp "$pod" >/dev/null && crictl rmp "$pod" >/dev/null || fail "containerd: the pod would not stop and go"
say "ok containerd: crictl runp --runtime runsc ran the pod in a runsc sandbox"
