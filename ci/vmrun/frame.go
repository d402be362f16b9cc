// Package vmrun boots one matrix VM under QEMU, follows its serial console,
// enforces a time limit, and takes the results back from the framed archive
// the VM writes on its second serial port.
package vmrun

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The frame the VM's cgm-run prints around the base64 of its results
// (a tar.gz of the harness output folder).
const (
	frameBegin = "-----BEGIN CGM ARCHIVE "
	frameEnd   = "-----END CGM ARCHIVE-----"
)

// ErrNoFrame means the stream held no complete frame: the VM stopped before
// it could send its results.
var ErrNoFrame = errors.New("no complete CGM ARCHIVE frame in the VM output")

// EncodeFrame writes data the way cgm-run does (used by tests and the fake
// qemu).
func EncodeFrame(w io.Writer, data []byte) error {
	sum := sha256.Sum256(data)
	if _, err := fmt.Fprintf(w, "%ssha256=%s bytes=%d-----\n", frameBegin, hex.EncodeToString(sum[:]), len(data)); err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 76 {
		if _, err := io.WriteString(w, enc[:76]+"\n"); err != nil {
			return err
		}
		enc = enc[76:]
	}
	if enc != "" {
		if _, err := io.WriteString(w, enc+"\n"); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, frameEnd+"\n")
	return err
}

// DecodeFrame finds the last complete frame in r and returns its payload
// after checking length and sha256. Carriage returns (a tty's onlcr) and
// lines outside the frame are ignored.
func DecodeFrame(r io.Reader) ([]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		in        bool
		b64       strings.Builder
		wantSum   string
		wantBytes int
		found     []byte
		lastErr   error
	)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, frameBegin):
			in = true
			b64.Reset()
			var err error
			wantSum, wantBytes, err = parseFrameHeader(strings.TrimPrefix(line, frameBegin))
			if err != nil {
				in = false
				lastErr = err
			}
		case in && line == frameEnd:
			in = false
			data, err := checkFrame(b64.String(), wantSum, wantBytes)
			if err != nil {
				lastErr = err
				continue
			}
			found, lastErr = data, nil
		case in:
			b64.WriteString(strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the VM's frame: %w", err)
	}
	if found != nil {
		return found, nil
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, ErrNoFrame
}

func parseFrameHeader(h string) (sum string, n int, err error) {
	h = strings.TrimSuffix(h, "-----")
	for _, f := range strings.Fields(h) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "sha256":
			sum = v
		case "bytes":
			n, err = strconv.Atoi(v)
			if err != nil {
				return "", 0, fmt.Errorf("frame header %q: bad bytes=: %w", h, err)
			}
		}
	}
	if len(sum) != 64 {
		return "", 0, fmt.Errorf("frame header %q has no sha256=", h)
	}
	return sum, n, nil
}

func checkFrame(b64, wantSum string, wantBytes int) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("frame body is not base64 (the serial line garbled it?): %w", err)
	}
	if len(data) != wantBytes {
		return nil, fmt.Errorf("frame carries %d bytes, its header says %d: truncated", len(data), wantBytes)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != wantSum {
		return nil, fmt.Errorf("frame sha256 %s does not match its header %s: corrupted", got, wantSum)
	}
	return data, nil
}
