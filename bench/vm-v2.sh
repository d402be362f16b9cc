#!/bin/sh
# bench/vm-v2.sh: run cgbench inside a throw-away cgroup v2 VM (QEMU, TCG or
# KVM) and bring its report back to out/bench/vm-<mode>/.
#
# A stopgap until ci/ offers a payload hook: it reuses the matrix's cached
# kernel and busybox initramfs (run `make matrix MODES=v2` once) read-only.
# Their /init mounts the payload disk and runs /payload/cgm-run <mode>; here
# that script is ours and runs cgbench instead of the harness.
#
#   bench/vm-v2.sh [cgbench flags…]      e.g. -pairs 20 -parallel 1,8,32,64
# Environment: MODE (v2), MEM (MiB, 8192), CPUS (2), LIMIT (seconds, 5400),
#              KERNEL, INITRD (default: newest in out/cache/vm),
#              STOCK, PATCHED (default: bin/runsc-stock, bin/runsc-patched).
set -eu
cd "$(dirname "$0")/.."
MODE=${MODE:-v2}
MEM=${MEM:-8192}
CPUS=${CPUS:-2}
LIMIT=${LIMIT:-5400}
KERNEL=${KERNEL:-$(ls -t out/cache/vm/kernel/*/vmlinuz 2>/dev/null | head -1)}
INITRD=${INITRD:-$(ls -t out/cache/vm/busybox-*/initramfs.cpio 2>/dev/null | head -1)}
[ -n "$KERNEL" ] && [ -n "$INITRD" ] || {
	echo "vm-v2: no cached kernel/initramfs in out/cache/vm: run make matrix MODES=v2 once" >&2
	exit 2
}
STOCK=${STOCK:-bin/runsc-stock}
PATCHED=${PATCHED:-bin/runsc-patched}
for b in "$STOCK" "$PATCHED"; do
	[ -x "$b" ] || { echo "vm-v2: $b missing: run make runsc" >&2; exit 2; }
done

out=out/bench/vm-$MODE
rm -rf "$out" && mkdir -p "$out/stage/bin" "$out/stage/out"
CGO_ENABLED=0 go build -o "$out/stage/bin/cgbench" ./cmd/cgbench
cp "$STOCK" "$out/stage/bin/runsc-stock"
cp "$PATCHED" "$out/stage/bin/runsc-patched"
printf '%s\n' "$*" >"$out/stage/bench-args"
cat >"$out/stage/cgm-run" <<'RUN'
#!/bin/sh
# Runs inside the VM from the payload disk; see bench/vm-v2.sh.
P=/payload
export PATH="$P/bin:/usr/sbin:/usr/bin:/sbin:/bin"
echo "cgm: start mode=$1 kernel=$(uname -r) cgroupfs=$(stat -fc %T /sys/fs/cgroup) (cgbench payload)"
mkdir -p /run/cgb && cd /run/cgb
# shellcheck disable=SC2046
cgbench $(cat $P/bench-args) -stock $P/bin/runsc-stock -patched $P/bin/runsc-patched \
	-busybox /bin/busybox -out /run/cgb/out \
	-conformance-report /none -matrix-report /none >/run/cgb/report.md </dev/null
rc=$?
echo "cgbench: exit=$rc"
cat /run/cgb/report.md
cp /run/cgb/out/report.json /run/cgb/report.md $P/out/ 2>/dev/null
echo "$rc" >$P/out/exit-code
sync
RUN
chmod 755 "$out/stage/cgm-run"
img="$out/payload.ext4"
mke2fs -q -F -t ext4 -L cgm-payload -d "$out/stage" "$img" 768M
rm -rf "$out/stage"

accel="tcg,thread=multi"
[ -w /dev/kvm ] && accel=kvm
echo "vm-v2: booting $MODE ($accel, $CPUS CPUs, $MEM MiB, limit ${LIMIT}s); console in $out/console.log"
echo "host loadavg before: $(cat /proc/loadavg)" >"$out/host-load"
set +e
timeout -s KILL "$LIMIT" qemu-system-x86_64 -machine q35 -accel "$accel" -cpu max -smp "$CPUS" -m "$MEM" \
	-nodefaults -no-user-config -display none -no-reboot \
	-kernel "$KERNEL" -initrd "$INITRD" \
	-append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init cgm.payload=/dev/nvme0n1 cgm.mode=$MODE" \
	-serial "file:$out/console.log" \
	-device nvme,id=nvme0,serial=cgm \
	-drive "file=$img,if=none,id=d0,format=raw,snapshot=off" -device nvme-ns,drive=d0,bus=nvme0,nsid=1 </dev/null
qrc=$?
set -e
echo "host loadavg after: $(cat /proc/loadavg)" >>"$out/host-load"
[ $qrc -eq 137 ] && echo "vm-v2: qemu was killed (the ${LIMIT}s limit, or by hand)" >&2
for f in report.json report.md exit-code; do
	debugfs -R "dump /out/$f $out/$f" "$img" >/dev/null 2>&1 || true
done
rm -f "$img"
if [ ! -s "$out/report.json" ]; then
	echo "vm-v2: no report came back; last console lines:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
echo "vm-v2: report in $out/report.json (cgbench exit $(cat "$out/exit-code" 2>/dev/null))"
