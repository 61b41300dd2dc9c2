package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRead: a regular file within the limit is read; every other kind of
// file is refused before anything is read, naming what it is; a file over
// the limit is refused. None of them blocks (a FIFO with no writer would
// block a plain open for good) or reads more than the limit.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	big := filepath.Join(dir, "big.yaml")
	fifo := filepath.Join(dir, "fifo")
	if err := os.WriteFile(small, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 2<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, want string
		missing    bool
	}{
		{small, "", false},
		{big, "larger than the 1 KiB such a file may be", false},
		{fifo, "a named pipe (FIFO), not a regular file", false},
		{dir, "a directory, not a regular file", false},
		{"/dev/zero", "a character device, not a regular file", false},
		{"/dev/urandom", "a character device, not a regular file", false},
		{filepath.Join(dir, "none"), "", true},
	} {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			t.Parallel()
			b, err := Read(tt.path, 1<<10)
			if tt.missing {
				if want := "open " + tt.path + ": no such file or directory"; err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Read = %v; want %q", err, want)
				}
				return
			}
			if tt.want == "" {
				if err != nil || string(b) != "name: x\n" {
					t.Fatalf("Read = %q, %v", b, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.path+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read(%s) = %v; want an *Error naming the file and saying %q", tt.path, err, tt.want)
			}
		})
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{1 << 20: "1 MiB", 64 << 10: "64 KiB", 300: "300 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
