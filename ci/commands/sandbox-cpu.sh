# A -command script for the matrix (issue 38): what a runsc sandbox costs a
# TCG guest, in the guest's CPU ticks (1/100 s, both vCPUs), for each gVisor
# platform, interleaved: create+start of 3 sandboxes, 30 s with them idle,
# their delete --force. Results in OUT/MODE/result.txt:
#   go run ./ci/cmd/matrix -modes v2 -jobs 1 -out out/sandbox-cpu -command ci/commands/sandbox-cpu.sh
set -u
B=/tmp/b
mkdir -p $B/rootfs/bin && cp /bin/busybox $B/rootfs/bin/busybox
cd $B && runsc-patched spec -- /bin/busybox sleep 1000 && sed -i 's/"terminal": true/"terminal": false/' config.json
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
for round in 1 2; do
	for p in systrap ptrace; do
		R=/tmp/r-$p-$round
		c0=$(busy)
		for i in 1 2 3; do
			runsc-patched --root $R --network none --platform $p create --bundle $B c$i &&
				runsc-patched --root $R --platform $p start c$i
		done
		c1=$(busy)
		sleep 30
		c2=$(busy)
		for i in 1 2 3; do runsc-patched --root $R --platform $p delete --force c$i; done
		c3=$(busy)
		echo "round $round $p: create+start x3 $((c1 - c0)) ticks; idle 30 s $((c2 - c1)) ticks; delete x3 $((c3 - c2)) ticks" | tee -a "$CGM_OUT/result.txt"
	done
done
