package analyze

import (
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// readOptions are what the analysis needs a reader to keep: the bodies of
// the failure-table probes, and the verdict on each refusal's body (does it
// carry its surface's documented error?).
func readOptions() decode.Options {
	return decode.Options{KeepBody: method.IsContractStream, Judge: shapeOK}
}

// Read reads run folders or results files into memory for the analysis
// (decode.Read with ReadOptions).
func Read(paths []string) (*decode.Input, error) { return decode.Read(paths, readOptions()) }

// Open reads run folders or results files into a compact temporary copy on
// disk for the analysis (decode.Open with ReadOptions); Close removes it.
func Open(paths []string) (*decode.Spill, error) { return decode.Open(paths, readOptions()) }

// FromResults makes an input of results held in memory, with the labels
// the engine sent them with, for the analysis (decode.FromResults with the
// same options as Read).
func FromResults(rs []archive.Result) *decode.Input { return decode.FromResults(rs, readOptions()) }
