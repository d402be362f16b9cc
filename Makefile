# The two README commands:
#   make conformance   build everything, run every case on this host
#   make test          unit tests, vet, gofmt, the series' own tests
#
# Everything generated goes to bin/, out/ and work/ (all git-ignored).

GO        ?= go
MODES     ?= v1 hybrid v2 systemd-v2 systemd-v1
export CGO_ENABLED = 0
# .ci/install-deps puts Go in /usr/local/go-ci when the machine has none.
export PATH := /usr/local/go/bin:/usr/local/go-ci/bin:$(PATH)

.PHONY: all deps runsc dist install use-it runsc-prs cgconform clients kubelet-cpu conformance test vet fmt-check actionlint fuzz matrix matrix-shard killstorm evidence bench upstream-series upstream-check upstream-tests upstream-sync clean

all: runsc cgconform

# Debian packages and Go, installed only when missing (needs root then).
deps:
	@.ci/install-deps

# bin/runsc-stock and bin/runsc-patched from the gVisor version in go.mod;
# rebuilt only when that version or a patch changes.
runsc:
	$(GO) run ./cmd/build-runsc build

# The release to side-load (README "Use it"): out/dist/runsc-VERSION-
# linux-amd64.tar.gz (the patched runsc, gVisor's containerd shim built from
# the same tree, BUILD.json: the gVisor version and every patch's sha256)
# and out/dist/SHA256SUMS; the same checkout gives the same bytes.
dist: runsc
	$(GO) run ./cmd/build-runsc dist

# Installs the release's two binaries into $(DESTDIR)$(PREFIX)/bin, after
# checking the tarball against SHA256SUMS.
PREFIX ?= /usr/local
install: dist
	cd out/dist && sha256sum --check --quiet SHA256SUMS
	rm -rf out/dist/unpacked && mkdir -p out/dist/unpacked
	tar -xzf out/dist/$$(awk '{print $$2}' out/dist/SHA256SUMS) -C out/dist/unpacked
	cd out/dist/unpacked/* && sha256sum --check --quiet SHA256SUMS
	install -D -m 0755 out/dist/unpacked/*/runsc "$(DESTDIR)$(PREFIX)/bin/runsc"
	install -D -m 0755 out/dist/unpacked/*/containerd-shim-runsc-v1 "$(DESTDIR)$(PREFIX)/bin/containerd-shim-runsc-v1"

# README "Use it": its marked snippets, as written, from the release
# tarball, in a systemd cgroup v2 VM (ci/commands/use-it.sh), with the
# containerd, ctr and crictl make clients built as the node's; the result
# in out/use-it/systemd-v2/harness/result.txt; fails unless every snippet passed.
use-it: dist cgconform
	rm -f bin/useit-*.sh bin/runsc-*-linux-amd64.tar.gz
	$(GO) run ./cmd/useit -readme README.md -out bin
	cp out/dist/$$(awk '{print $$2}' out/dist/SHA256SUMS) bin/
	rm -rf out/use-it
	-$(GO) run ./ci/cmd/matrix -modes systemd-v2 -jobs 1 -out out/use-it -command ci/commands/use-it.sh \
		-bins "$$(cd bin && ls useit-*.sh runsc-*-linux-amd64.tar.gz containerd ctr crictl | paste -sd, -)" $(MATRIX_FLAGS)
	@# A -command VM sends no harness report (the matrix says no-report):
	@# the verdict is the script's own exit status.
	@cat out/use-it/systemd-v2/harness/result.txt
	@test "$$(cat out/use-it/systemd-v2/harness/exit-code 2>/dev/null)" = 0 || \
		{ echo "use-it: FAILED (out/use-it/systemd-v2/console.log)"; exit 1; }

# bin/runsc-pr-NN-name: stock runsc with one pull request of the series (and
# the ones it needs), for that pull request's before/after table; for one
# that needs others, bin/runsc-needs-NN-name: stock with only those; each
# with its shim (bin/containerd-shim-runsc-v1-pr-NN-name) when one of its
# pull requests changes the shim.
runsc-prs:
	$(GO) run ./cmd/build-runsc prs

cgconform:
	$(GO) build -o bin/cgconform ./cmd/cgconform

# Real clients (clients/): containerd 2.x with CRI, ctr, the runc shim and
# crictl from the Go module proxy, gVisor's runsc shim from the stock and
# patched trees, and the kubelet (k8s.io/kubernetes, about 40 minutes cold
# on 2 cores; KUBELET=0 leaves it out); rebuilt only when a pinned version
# changes.
KUBELET ?= 1
clients: runsc
	$(GO) run ./cmd/cgclients build -kubelet=$(if $(filter 0,$(KUBELET)),false,true)
	$(GO) build -o bin/cgclients ./cmd/cgclients

# The seed's measurement under a real kubelet (issue 26): the
# client-kubelet-* cases in the systemd VMs, one at a time, stock and
# patched runsc (and stock + 01 where the caller moved itself into a leaf,
# the design note's way out); out/kubelet/report.md and report.json (the kubelet-cpu
# step's note holds the numbers).
kubelet-cpu: deps runsc runsc-prs cgconform clients
	$(GO) run ./ci/cmd/matrix -modes "systemd-v2 systemd-v1" -out out/kubelet -jobs 1 -run '^client-kubelet-' \
		-runtimes runsc-patched=/payload/bin/runsc-patched,runsc-stock=/payload/bin/runsc-stock,runsc-pr-01-clean-path=/payload/bin/runsc-pr-01-clean-path \
		-harness-args '-runtime-cases runsc-pr-01-clean-path=^client-kubelet-cpu-leaf\s' $(MATRIX_FLAGS)

# The main job: every case on this host against every available runtime.
# The kill-point sweeps (cases/killsweep-*) run for runsc-patched alone here:
# stock runsc and runc leak at nearly every kill point (their rows are
# measured and declared in the cases) and would add 5 minutes each.
NOSWEEP := ^([^k]|k[^i]|ki[^l]|kil[^l]|kill[^s]|kills[^w])
conformance: deps runsc cgconform
	bin/cgconform -cases cases -out out/conformance $(foreach r,runsc-stock runc crun,-runtime-cases '$(r)=$(NOSWEEP)') $(CONFORMANCE_FLAGS)

# CGCONFORM_ROOT_TESTS=1: the tests that create cgroups and processes
# (base/roottest) run too; as non-root they fail rather than skip.
test: deps vet fmt-check actionlint
	CGCONFORM_ROOT_TESTS=1 $(GO) test -count=1 ./...
	$(GO) run ./cmd/build-runsc test

vet:
	$(GO) vet ./...

# gofmt over tracked Go files only: work/ holds gVisor's generated sources.
fmt-check:
	@out=$$(git ls-files -z '*.go' | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The GitHub Actions workflow (ci/github/, copied to .github/workflows/ in a
# fork) checked by actionlint, pinned in go.mod's tool block; it looks in
# .github/workflows/ by itself, so the file is named. It runs shellcheck on
# the run: scripts when shellcheck is on PATH.
actionlint:
	$(GO) tool actionlint ci/github/matrix.yml

# The series' fuzz targets, each for FUZZTIME (make test runs them for 10s).
FUZZTIME ?= 10m
fuzz: deps
	$(GO) run ./cmd/build-runsc -fuzztime $(FUZZTIME) fuzz

# Real hosts of every cgroup mode in QEMU; MODES="v2" runs a subset. The
# payload carries the real clients (make clients) for the client cases.
matrix: deps runsc cgconform clients
	$(GO) run ./ci/cmd/matrix -modes "$(MODES)" -out out/matrix $(MATRIX_FLAGS)

# One job of the GitHub Actions matrix (ci/github/matrix.yml): the cases of
# shard SHARD (ci/github/shards.txt) for one runtime, RUNTIME (runsc-patched
# or runsc-stock from the payload, or runc or crun from the guest's Debian),
# in the modes of MODES; e.g. make matrix-shard MODES=v2 RUNTIME=runc
# SHARD=runtime. It runs with the bin/ at hand, built by make runsc
# cgconform clients (the workflow's build job) and not rebuilt here; reports
# in out/matrix-SHARD-RUNTIME.
matrix-shard: deps
	@test -n "$(RUNTIME)" -a -n "$(SHARD)" || { echo "usage: make matrix-shard MODES=mode RUNTIME=runsc-patched|runsc-stock|runc|crun SHARD=name (ci/github/shards.txt) [MATRIX_FLAGS=...]"; exit 2; }
	$(GO) run ./ci/cmd/matrix -modes "$(MODES)" -out out/matrix-$(SHARD)-$(RUNTIME) -shard $(SHARD) \
		-runtimes $(if $(filter runsc-%,$(RUNTIME)),$(RUNTIME)=/payload/bin/$(RUNTIME),$(RUNTIME)) $(MATRIX_FLAGS)

# The kill storms (cases/killstorm-*: create and start, empty and relative
# paths, a create into a caller's leaf) at KILLSTORM_TRIALS trials each,
# 200 per mode, in every mode of
# MODES, runsc-patched and runsc-stock; not in CI (hours under TCG; CI runs
# them at 2 trials). Each result's "trials" says trials, killed, failed,
# leaked and the longest delete.
KILLSTORM_TRIALS ?= 40
killstorm: deps runsc cgconform
	$(GO) run ./ci/cmd/matrix -modes "$(MODES)" -out out/killstorm -timeout 12h -run '^killstorm-' \
		-runtimes runsc-patched=/payload/bin/runsc-patched,runsc-stock=/payload/bin/runsc-stock \
		-harness-args '-trials=$(KILLSTORM_TRIALS)' $(MATRIX_FLAGS)

# The run behind the PR.md tables: in every mode of MODES, stock runsc on
# every case a table names, and each pull request's build, and for one that
# needs others the build of only those (runsc-needs-NN-name), on its own
# table's cases (out/evidence/report.json, recording each runtime's build;
# copy it to patches/evidence/ to keep it).
evidence: deps runsc runsc-prs cgconform
	$(GO) run ./ci/cmd/upstream evidence -modes "$(MODES)" $(MATRIX_FLAGS)

# Patched vs stock runsc, interleaved, on this host and then in a cgroup v2
# VM (QEMU); BENCH_FLAGS passes more flags (see docs/BENCHMARKS.md).
bench: deps runsc
	$(GO) run ./cmd/cgbench suite -out out/bench $(BENCH_FLAGS)

# The series as pull requests for gVisor (README, "Sending the series
# upstream"): OUT/NN-name/{000N-*.patch,PR.md} per pull request, authored by
# AUTHOR_NAME/AUTHOR_EMAIL or git config user.name/user.email, the PR.md
# tables filled from REPORT (default the runs in patches/evidence/, else
# out/matrix/report.json if present). A table whose cells come from another
# build than the current patches make is refused (exit 1, naming the pull
# request, the file, both builds and the make evidence to run); one from a
# run that records no build too, unless ALLOW_UNPROVEN=1, which prints it
# marked "Build unproven".
upstream-series:
	@test -n "$(OUT)" || { echo "usage: make upstream-series OUT=dir [REPORT=out/matrix/report.json[,more.json]] [ALLOW_UNPROVEN=1] [AUTHOR_NAME=... AUTHOR_EMAIL=...]"; exit 2; }
	$(GO) run ./ci/cmd/upstream series -out "$(OUT)" -report "$(REPORT)" $(if $(filter 1,$(ALLOW_UNPROVEN)),-allow-unproven) -author-name "$(AUTHOR_NAME)" -author-email "$(AUTHOR_EMAIL)"

# Each pull request alone (on what it needs) and all in order, on two trees
# made from master BASE (default HEAD) of the gVisor repository DIR (a
# checkout or a bare mirror with the go branch; only read): master itself
# (git am, gofmt, BUILD entries, own test) and the go branch's commit made
# from BASE plus master's tests of the touched packages (go build
# ./runsc/..., go vet and unit tests, as nobody without the host's
# cgroupfs). No other tree: a pull request that does not build there fails.
# A pull request fails when none of the tests it adds or changes passes
# there (all skip, or none runs). On its tree alone, each mutation of
# patches/NN-name/mutations is applied alone and the same tests run again:
# one that survives or does not compile fails it. PRS=NN-name,... checks
# only those pull requests (with what they need applied).
# Needs root (for the test sandbox); out/upstream-check/report.{md,json}.
upstream-check:
	@test -n "$(DIR)" || { echo "usage: make upstream-check DIR=/path/to/gvisor [BASE=master-rev] [GO_REF=go] [PRS=NN-name,...]"; exit 2; }
	$(GO) run ./ci/cmd/upstream check -dir "$(DIR)" -base "$(or $(BASE),HEAD)" -go-ref "$(or $(GO_REF),go)" $(if $(PRS),-prs "$(PRS)")

# The series' tests in upstream's runsc/container test files, which the go
# branch lacks (DIR: a gVisor checkout or bare repository to take them
# from), built patched and stock-with-the-tests (PRS=1: and each pull
# request's build with its own tests), run in the VMs of MODES;
# out/upstream-tests/report.md.
upstream-tests:
	@test -n "$(DIR)" || { echo "usage: make upstream-tests DIR=/path/to/gvisor [REV=rev]"; exit 2; }
	$(GO) run ./ci/cmd/upstream tests -dir "$(DIR)" -rev "$(or $(REV),HEAD)" $(if $(PRS),-prs) -- -modes "$(MODES)" $(MATRIX_FLAGS)

# WORKSPACE's patch list, rewritten from patches/series.
upstream-sync:
	$(GO) run ./ci/cmd/upstream sync

clean:
	rm -rf bin out work
