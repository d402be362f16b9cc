package upstream

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

func TestParseMutations(t *testing.T) {
	const list = "patches/05-x/mutations"
	for _, tc := range []struct {
		name    string
		data    string
		want    []Mutation
		wantErr []string // each must start a message, in order
	}{
		{
			name: "two blocks, tabs kept",
			data: "runsc/a.go\n\terr = os.Rename(tmp, path)\n\terr = os.WriteFile(path, data, 0640)\n\nrunsc/b/b.go\n\t\treturn x != 0\n\t\treturn true\n",
			want: []Mutation{
				{Block: 1, File: "runsc/a.go", Line: "\terr = os.Rename(tmp, path)", Broken: "\terr = os.WriteFile(path, data, 0640)"},
				{Block: 2, File: "runsc/b/b.go", Line: "\t\treturn x != 0", Broken: "\t\treturn true"},
			},
		},
		{
			name: "blank lines at the end",
			data: "a.go\n\tx := 1\n\tx := 2\n\n\n",
			want: []Mutation{{Block: 1, File: "a.go", Line: "\tx := 1", Broken: "\tx := 2"}},
		},
		{
			name: "no final newline",
			data: "a.go\n\tx := 1\n\tx := 2",
			want: []Mutation{{Block: 1, File: "a.go", Line: "\tx := 1", Broken: "\tx := 2"}},
		},
		{
			name:    "two lines",
			data:    "a.go\n\tx := 1\n\tx := 2\n\nb.go\n\ty := 1\n",
			want:    []Mutation{{Block: 1, File: "a.go", Line: "\tx := 1", Broken: "\tx := 2"}},
			wantErr: []string{list + ": block 2: has 2 lines"},
		},
		{
			name:    "four lines",
			data:    "a.go\n\tx := 1\n\tx := 2\n\tx := 3\n",
			wantErr: []string{list + ": block 1: has 4 lines"},
		},
		{
			name:    "two blank lines between blocks",
			data:    "a.go\n\tx := 1\n\tx := 2\n\n\nb.go\n\ty := 1\n\ty := 2\n",
			want:    []Mutation{{Block: 1, File: "a.go", Line: "\tx := 1", Broken: "\tx := 2"}},
			wantErr: []string{list + ": block 2: starts with a blank line"},
		},
		{
			name:    "broken line is the line",
			data:    "a.go\n\tx := 1\n\tx := 1\n",
			wantErr: []string{list + ": block 1: the broken line is the line itself"},
		},
		{
			name:    "a path that leaves the tree",
			data:    "../a.go\n\tx := 1\n\tx := 2\n\n/etc/a.go\n\tx := 1\n\tx := 2\n\nrunsc/./a.go\n\tx := 1\n\tx := 2\n",
			wantErr: []string{list + ": block 1: first line \"../a.go\"", list + ": block 2: first line \"/etc/a.go\"", list + ": block 3: first line \"runsc/./a.go\""},
		},
		{
			name:    "empty",
			data:    "\n",
			wantErr: []string{list + ": lists no mutation"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, invalid, blocks := parseMutations(list, []byte(tc.data))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mutations (-want +got):\n%s", diff)
			}
			if len(invalid) != len(tc.wantErr) {
				t.Fatalf("messages %q, want %q", invalid, tc.wantErr)
			}
			for i, w := range tc.wantErr {
				if !strings.HasPrefix(invalid[i], w) {
					t.Errorf("message %q does not start %q", invalid[i], w)
				}
			}
			if n := len(got) + len(invalid); tc.name != "empty" && blocks != n {
				t.Errorf("blocks %d, want %d", blocks, n)
			}
		})
	}
}

func TestMutationApply(t *testing.T) {
	src := []byte("package a\n\nfunc f(x int) bool {\n\tif x > 0 {\n\t\treturn true\n\t}\n\treturn false\n}\n")
	m := Mutation{File: "a.go", Line: "\tif x > 0 {", Broken: "\tif x > 1 {"}
	got, err := m.Apply(src)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(src), "x > 0", "x > 1", 1)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Apply (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		m    Mutation
		n    int
	}{
		{"a closing brace", Mutation{File: "a.go", Line: "\t}", Broken: "\t} // x"}, 1},
		{"one of two returns", Mutation{File: "a.go", Line: "\t\treturn true", Broken: "\t\treturn false"}, 1},
		// Exact: the same text with other indentation is not the line.
		{"spaces for tabs", Mutation{File: "a.go", Line: "    if x > 0 {", Broken: "    if false {"}, 0},
		{"part of a line", Mutation{File: "a.go", Line: "if x > 0 {", Broken: "if false {"}, 0},
		{"the last brace", Mutation{File: "a.go", Line: "}", Broken: "} // x"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Count(src); got != tc.n {
				t.Errorf("Count = %d, want %d", got, tc.n)
			}
			_, err := tc.m.Apply(src)
			if (err == nil) != (tc.n == 1) {
				t.Errorf("Apply: %v with the line %d times", err, tc.n)
			}
		})
	}
	twice := Mutation{File: "a.go", Line: "\treturn false", Broken: "\treturn true"}
	if _, err := twice.Apply(append(src, "\treturn false\n"...)); err == nil || !strings.Contains(err.Error(), "2 times") {
		t.Errorf("Apply on a line found twice: %v, want it refused", err)
	}
}

// TestSeriesMutations: the lists in this repository's patches parse.
func TestSeriesMutations(t *testing.T) {
	s, err := runscbuild.ReadSeries(filepath.Join("..", "..", "patches", runscbuild.SeriesFile))
	if err != nil {
		t.Skip(err)
	}
	lists, err := readMutationLists(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		if len(l.invalid) > 0 {
			t.Error(l.invalid)
		}
	}
}
