# A -command script for the matrix (issue 35): the window a create leaves
# when the caller made the leaf of cgroupsPath (killstorm-create-premade's
# one failure, 1 of 199 under heavy I/O), made deterministic. Every fsync
# of the create's state saves is delayed 3 s (strace), so the sandbox boots
# while the save of its PID is still on its way; the create is SIGKILLed 2 s
# after the sandbox appears in the leaf, then `delete --force`. Counts what
# still runs in the caller's leaf, per runtime and try, in
# OUT/MODE/result.txt, and exits 1 if runsc-patched left anything. With
# -bins runsc-before-filler (a copy of the build before 07 filled the
# start-sync pipe), that build runs the same tries beside it:
#   go run ./ci/cmd/matrix -modes "v1 v2" -jobs 2 -out out/premade-window -bins runsc-before-filler -command ci/commands/premade-window.sh
set -u
B=/tmp/b
mkdir -p $B/rootfs/bin && cp /bin/busybox $B/rootfs/bin/busybox
cd $B && runsc-patched spec -- /bin/busybox sleep 1000 && sed -i 's/"terminal": true/"terminal": false/' config.json
sed -i 's|"linux": {|"linux": {"cgroupsPath": "/cgwin/leaf",|' config.json
# The caller's leaf, in every hierarchy (v1: each mount; v2: the one).
hier=$(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts)
for h in $hier; do
	mkdir -p "$h/cgwin/leaf"
	[ -f "$h/cpuset.cpus" ] && for x in cpus mems; do cat "$h/cpuset.$x" >"$h/cgwin/cpuset.$x"; cat "$h/cpuset.$x" >"$h/cgwin/leaf/cpuset.$x"; done
	[ -f "$h/cgwin/cgroup.subtree_control" ] && sed 's/[^ ][^ ]*/+&/g' "$h/cgwin/cgroup.controllers" >"$h/cgwin/cgroup.subtree_control"
done
procs=$(for h in $hier; do [ -f "$h/cgwin/leaf/cgroup.procs" ] && echo "$h/cgwin/leaf/cgroup.procs" && break; done)
fail=0
for rt in runsc-patched runsc-before-filler; do  # stock saves nothing during create: no save to hold open
	command -v $rt >/dev/null || continue
	for try in 1 2 3; do
		R=/tmp/r-$rt-$try ID=w$try
		strace -f --detach-on=execve -qq -o /dev/null -P "$R/${ID}_sandbox:$ID.state.tmp" -P "$R/${ID}_sandbox:$ID.state" \
			-e trace=fsync -e inject=fsync:delay_enter=3000000:when=1+ \
			$rt --root $R --network none create --bundle $B $ID &
		S=$!
		sb=""
		for i in $(seq 600); do
			for p in $(cat "$procs"); do grep -q boot /proc/$p/cmdline 2>/dev/null && sb=$p; done
			[ -n "$sb" ] && break
			sleep 0.1
		done
		sleep 2
		C=$(for d in /proc/[0-9]*; do read -r pid comm st ppid rest <"$d/stat" 2>/dev/null && [ "$ppid" = "$S" ] && echo "$pid"; done | head -1)
		kill -9 "$C"
		wait $S
		$rt --root $R delete --force $ID
		sleep 1
		left=$(cat "$procs" | tr '\n' ' ')
		verdict=PASS
		[ -n "$left" ] && verdict=FAIL && [ $rt = runsc-patched ] && fail=1
		echo "$verdict $rt try $try: sandbox ${sb:-none} seen, create $C killed 2 s later; after delete --force the caller's leaf holds: ${left:-nothing}" | tee -a "$CGM_OUT/result.txt"
		for p in $left; do kill -9 "$p"; done
		sleep 1
	done
done
exit $fail
