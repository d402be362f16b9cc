package vmrun

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

func frame(t *testing.T, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := EncodeFrame(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDecodeFrame(t *testing.T) {
	payload := bytes.Repeat([]byte("report.json {\"results\":[]}\n"), 40)
	good := frame(t, payload)
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	for _, tc := range []struct {
		name    string
		stream  string
		want    []byte
		wantErr string
	}{
		{name: "clean", stream: good, want: payload},
		{name: "noise around it", stream: "booting…\n" + good + "[  12.3] reboot: Power down\n", want: payload},
		{name: "tty CRLF", stream: strings.ReplaceAll(good, "\n", "\r\n"), want: payload},
		{name: "last complete frame wins", stream: frame(t, []byte("old")) + good, want: payload},
		{name: "empty payload", stream: frame(t, nil), want: []byte{}},
		{name: "nothing", stream: "kernel panic\n", wantErr: ErrNoFrame.Error()},
		{name: "cut short", stream: strings.Join(lines[:len(lines)-3], "\n") + "\n", wantErr: ErrNoFrame.Error()},
		{name: "line lost", stream: strings.Join(append(append([]string{}, lines[:3]...), lines[4:]...), "\n") + "\n",
			wantErr: "truncated"},
		{name: "bit flip", stream: strings.Replace(good, lines[2], "A"+lines[2][1:], 1), wantErr: "corrupted"},
		{name: "garbage in body", stream: strings.Replace(good, lines[2], "[ 3.1] kmsg", 1), wantErr: "not base64"},
		{name: "header without sum", stream: frameBegin + "bytes=3-----\nYWJj\n" + frameEnd + "\n", wantErr: "no sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeFrame(strings.NewReader(tc.stream))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeFrame error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("DecodeFrame = %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
}

func TestDecodeFrameNoFrameIsSentinel(t *testing.T) {
	_, err := DecodeFrame(strings.NewReader(""))
	if !errors.Is(err, ErrNoFrame) {
		t.Errorf("error %v is not ErrNoFrame", err)
	}
}

func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

func TestUntar(t *testing.T) {
	files, err := Untar(tgz(t, map[string]string{"./report.json": "{}", "./logs/a.err": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if string(files["report.json"]) != "{}" || string(files["logs/a.err"]) != "x" {
		t.Errorf("Untar = %v", files)
	}
	if _, err := Untar(tgz(t, map[string]string{"../../etc/passwd": "x"})); err == nil {
		t.Error("Untar accepted a member escaping its folder")
	}
	if _, err := Untar([]byte("not gzip")); err == nil {
		t.Error("Untar accepted garbage")
	}
}

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		line, started, done string
	}{
		{line: "=== RUN relative-path [host] runsc-patched", started: "relative-path [host] runsc-patched"},
		{line: "pass delete-force                                 [host]               runsc-patched     5.6s ",
			done: "delete-force [host] runsc-patched"},
		{line: "FAIL empty-path-contexts                          [kubepods-privileged] runc             26.1s delete: a: took 3.51s",
			done: "empty-path-contexts [kubepods-privileged] runc"},
		{line: "xdiv failed-start [container] runsc-stock 13.9s stock runsc …", done: "failed-start [container] runsc-stock"},
		{line: "pass standin-run [host] runc 1.0s exit 0", done: "standin-run [host] runc"},
		{line: "--- PASS standin/runc rc=0 (1s)"}, // the stand-in's old spelling is no progress line
		{line: "[    4.33] systemd[1]: Failed to find module 'autofs4'"},
		{line: "passed through"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			st, done := ParseProgress(tc.line)
			if st != tc.started || done != tc.done {
				t.Errorf("ParseProgress = (%q, %q), want (%q, %q)", st, done, tc.started, tc.done)
			}
		})
	}
}
