package archive

import (
	"fmt"
	"testing"
)

// TestParseShard: "i/n" reads back as shard i of n, and writes as it
// reads; anything else is refused with why.
func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, err string
		want    Shard
	}{
		{in: "0/3", want: Shard{0, 3}},
		{in: "2/3", want: Shard{2, 3}},
		{in: "0/1", want: Shard{0, 1}},
		{in: "3/3", err: `shard "3/3": want 0 <= i < n`},
		{in: "-1/3", err: `shard "-1/3": want 0 <= i < n`},
		{in: "0/0", err: `shard "0/0": want 0 <= i < n`},
		{in: "1", err: `shard "1": want i/n, such as 0/3`},
		{in: "a/b", err: `shard "a/b": want i/n, such as 0/3`},
	} {
		got, err := ParseShard(tc.in)
		if fmt.Sprint(err) != tc.err && !(err == nil && tc.err == "") || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v, %s", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("ParseShard(%q).String() = %q", tc.in, got.String())
		}
	}
}
