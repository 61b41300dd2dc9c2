package archive

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// LastSent returns the run folder under root whose run sent to target
// from one of sources (any, when either names none: the system's choice
// may be the same address) and ended last, with when it ended (a run
// that never recorded its end: when it started); "" when none did.
// Folders that are not runs are passed over.
func LastSent(root, target string, sources []string) (dir string, end time.Time) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", time.Time{}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		info, err := ReadRunInfo(filepath.Join(root, e.Name()))
		if err != nil || info == nil || info.Target != target || !shareSource(info.Sources, sources) {
			continue
		}
		t := info.End
		if t.Before(info.Start) {
			t = info.Start
		}
		if t.After(end) {
			dir, end = info.Dir, t
		}
	}
	return dir, end
}

// shareSource reports whether two runs' sources may share an address.
func shareSource(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, s := range a {
		if slices.Contains(b, s) {
			return true
		}
	}
	return false
}
