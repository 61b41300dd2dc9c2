// Package safefile reads the small files ratecheck is given by name
// (profiles, run.json, certificates and keys) so that no such name can take
// the machine's memory or block the process: a file that is not a regular
// file (a FIFO, a directory, a device such as /dev/zero) is refused before
// it is opened, it is opened without blocking, and at most a stated size
// is read.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Error is a file refused or unreadable: Path names it and Problem says
// what is wrong with it, in words for a person.
type Error struct {
	Path, Problem string
}

func (e *Error) Error() string { return e.Path + ": " + e.Problem }

// Read returns the contents of the regular file at path, of at most limit
// bytes. A path that names anything but a regular file, or a file larger
// than limit, is an *Error saying so. A file that cannot be opened or read
// is the *fs.PathError of the open or the read, as os.ReadFile returns it.
func Read(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open" // what the caller asked for: the file, opened
		}
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	// O_NONBLOCK: had the file been swapped for a FIFO since the Stat, the
	// open still returns at once, and the check below refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, limit)
	}
	return b, nil
}

// regular refuses anything but a regular file, naming what it is.
func regular(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return &Error{Path: path, Problem: what + ", not a regular file: give the path of a file"}
}

func tooLarge(path string, limit int64) error {
	return &Error{Path: path, Problem: fmt.Sprintf("larger than the %s such a file may be", size(limit))}
}

// size is a byte count in words: "1 MiB", "64 KiB", "300 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
