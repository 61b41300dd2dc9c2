package refserver

import "testing"

// FuzzParseFaults: a fault spec parses or is refused, and what parses
// reads back from its own String.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"", "5xx=0.02,reset=0.01,delay=5ms-40ms", "delay=20ms", "5xx=2", "reset=0.5,reset=0.1", "delay=40ms-5ms", "5xx=NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fs, err := ParseFaults(spec)
		if err != nil {
			return
		}
		if fs.ServerError < 0 || fs.Reset < 0 || fs.ServerError+fs.Reset > 1 || fs.DelayMin < 0 || fs.DelayMax < fs.DelayMin {
			t.Fatalf("ParseFaults(%q) = %+v", spec, fs)
		}
		back, err := ParseFaults(fs.String())
		if err != nil || back != fs {
			t.Fatalf("ParseFaults(%q) = %+v; its String %q reads back as %+v, %v", spec, fs, fs.String(), back, err)
		}
	})
}
