package mounts

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/sys/mountinfo"
)

const info = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /tmp/x rw shared:2 - tmpfs tmpfs rw
31 30 0:27 / /tmp/x/tree rw shared:3 - tmpfs tmpfs rw
32 31 0:28 / /tmp/x/tree/a\040b rw shared:4 - proc proc rw
33 31 0:29 / /tmp/x/tree/a/b/c rw shared:5 - tmpfs tmpfs rw
34 22 0:30 / /tmp/x/treehouse rw shared:6 - tmpfs tmpfs rw
`

// points orders what mountinfo's PrefixFilter keeps, as Under has it.
func TestPoints(t *testing.T) {
	ms, err := mountinfo.GetMountsFromReader(strings.NewReader(info), mountinfo.PrefixFilter("/tmp/x/tree"))
	if err != nil {
		t.Fatal(err)
	}
	// Deepest first, the escaped blank unescaped, no sibling whose name
	// only starts like dir.
	want := []string{"/tmp/x/tree/a/b/c", "/tmp/x/tree/a b", "/tmp/x/tree"}
	if d := cmp.Diff(want, points(ms)); d != "" {
		t.Errorf("points (-want +got):\n%s", d)
	}
}

func TestUnderSelf(t *testing.T) {
	got, err := Under(t.TempDir())
	if err != nil || len(got) != 0 {
		t.Errorf("Under(a fresh temp dir) = %q, %v; want nothing", got, err)
	}
}
