package archive

import (
	"runtime"
	"slices"
	"testing"
)

func TestParseLoadAverage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want []float64
	}{
		{"0.52 1.04 2.50 3/612 12345\n", []float64{0.52, 1.04, 2.5}},
		{"7.82 4.89 3.38 9/700 1", []float64{7.82, 4.89, 3.38}},
		{"", nil},
		{"1.0 x 2.0", nil},
		{"-1 0 0", nil},
	} {
		if got := parseLoadAverage(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("parseLoadAverage(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestStarved(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		m    *MachineInfo
		want bool
	}{
		{nil, false},
		{&MachineInfo{Cores: 2, LoadStart: []float64{1.5, 1, 1}, LoadEnd: []float64{1.9, 1, 1}}, false},
		{&MachineInfo{Cores: 2, LoadStart: []float64{1.5, 1, 1}, LoadEnd: []float64{7.8, 4, 3}}, true},
		{&MachineInfo{Cores: 2}, false},
	} {
		if got := tt.m.Starved(); got != tt.want {
			t.Errorf("%+v: Starved() = %v, want %v", tt.m, got, tt.want)
		}
	}
}

func TestThisMachine(t *testing.T) {
	t.Parallel()
	m := ThisMachine()
	if m.Cores != runtime.NumCPU() || m.OS != runtime.GOOS || m.Arch != runtime.GOARCH {
		t.Errorf("ThisMachine() = %+v", m)
	}
	if runtime.GOOS == "linux" && (m.Kernel == "" || len(m.LoadStart) != 3) {
		t.Errorf("on Linux the kernel release and load average are known: %+v", m)
	}
}
