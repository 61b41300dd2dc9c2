package analyze

import (
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// readOptions are what the analysis needs a reader to keep: the bodies of
// the failure-table probes, and the verdict on each refusal's body (does it
// carry its surface's documented error?).
func readOptions() decode.Options { return readOptionsFor(nil) }

// readOptionsFor are readOptions that judge the refusals of a contract's
// limits by refusals (by limit name).
func readOptionsFor(refusals map[string]Refusal) decode.Options {
	o := decode.Options{KeepBody: method.IsContractStream, Judge: shapes(refusals).judge}
	for _, r := range refusals {
		if r.status() != 429 {
			o.RefusedWith = func(surface string) uint16 { return refusalStatus(refusals, surface) }
			break
		}
	}
	return o
}

// Read reads run folders or results files into memory for the analysis
// (decode.Read with ReadOptions).
func Read(paths []string) (*decode.Input, error) { return decode.Read(paths, readOptions()) }

// ReadFor is Read of the runs of a contract whose limits' refusals look as
// refusals say (by limit name; see Config.Refusals).
func ReadFor(paths []string, refusals map[string]Refusal) (*decode.Input, error) {
	return decode.Read(paths, readOptionsFor(refusals))
}

// Open reads run folders or results files into a compact temporary copy on
// disk for the analysis (decode.Open with ReadOptions); Close removes it.
func Open(paths []string) (*decode.Spill, error) { return decode.Open(paths, readOptions()) }

// OpenFor is Open of the runs of a contract whose limits' refusals look
// as refusals say (see ReadFor).
func OpenFor(paths []string, refusals map[string]Refusal) (*decode.Spill, error) {
	return decode.Open(paths, readOptionsFor(refusals))
}

// FromResults makes an input of results held in memory, with the labels
// the engine sent them with, for the analysis (decode.FromResults with the
// same options as Read).
func FromResults(rs []archive.Result) *decode.Input { return decode.FromResults(rs, readOptions()) }
