package analyze

import (
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/method"
)

// ReadOptions are what the analysis needs a reader to keep: the bodies of
// the failure-table probes, and the verdict on each refusal's body (does it
// carry its surface's documented error?).
func ReadOptions() archive.Options {
	return archive.Options{KeepBody: method.IsContractStream, Judge: shapeOK}
}

// Read reads run folders or results files into memory for the analysis
// (archive.Read with ReadOptions).
func Read(paths []string) (*archive.Input, error) { return archive.Read(paths, ReadOptions()) }

// Open reads run folders or results files into a compact temporary copy on
// disk for the analysis (archive.Open with ReadOptions); Close removes it.
func Open(paths []string) (*archive.Spill, error) { return archive.Open(paths, ReadOptions()) }
