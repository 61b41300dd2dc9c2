package archive

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// MachineInfo is what a run ran on: enough to tell whether two runs of a
// series are comparable.
type MachineInfo struct {
	// Cores is the number of logical CPUs the process could use; OS and
	// Arch are Go's names; Kernel is the kernel's release where known.
	Cores  int    `json:"cores"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
	// LoadStart and LoadEnd are the 1-, 5- and 15-minute load averages at
	// the start and the end of the run, where the system says (Linux).
	LoadStart []float64 `json:"load_start,omitempty"`
	LoadEnd   []float64 `json:"load_end,omitempty"`
}

// ThisMachine describes the machine the process runs on now, its load
// average as LoadStart.
func ThisMachine() *MachineInfo {
	m := &MachineInfo{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, LoadStart: LoadAverage()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// LoadAverage returns the 1-, 5- and 15-minute load averages, or nil where
// the system does not say (only Linux's /proc/loadavg is read).
func LoadAverage() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	return parseLoadAverage(string(b))
}

// parseLoadAverage reads the first three fields of /proc/loadavg.
func parseLoadAverage(s string) []float64 {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil
	}
	load := make([]float64, 3)
	for i := range load {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return nil
		}
		load[i] = v
	}
	return load
}

// Starved reports whether the machine was loaded beyond its cores at the
// start or the end of the run (a 1-minute load average above the number of
// cores): its timings then carry another job's noise.
func (m *MachineInfo) Starved() bool {
	if m == nil || m.Cores <= 0 {
		return false
	}
	for _, l := range [][]float64{m.LoadStart, m.LoadEnd} {
		if len(l) > 0 && l[0] > float64(m.Cores) {
			return true
		}
	}
	return false
}
