package heap

import (
	stdheap "container/heap"
	"math"
	"math/rand/v2"
	"testing"
)

// ref is container/heap's heap of the same items, ordered the same way:
// what Heap is compared with, item for item.
type ref []Item[int]

func (r ref) Len() int           { return len(r) }
func (r ref) Less(i, j int) bool { return less(&r[i], &r[j]) }
func (r ref) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }
func (r *ref) Push(x any)        { *r = append(*r, x.(Item[int])) }
func (r *ref) Pop() any {
	old := *r
	x := old[len(old)-1]
	*r = old[:len(old)-1]
	return x
}

// TestAgainstContainerHeap pushes and pops random items, many with equal
// keys, and changes the least item's keys, in Heap and in container/heap's:
// every item popped is the same (the value too, so ties come out in the
// same order) and the two slices are equal after every step.
func TestAgainstContainerHeap(t *testing.T) {
	for _, tt := range []struct {
		name      string
		ops       int
		keys      int64 // keys drawn from [0, keys)
		ties      int64 // ties drawn from [0, ties)
		pushShare float64
		fixShare  float64
	}{
		{"distinct", 20000, math.MaxInt64, math.MaxInt64, 0.55, 0},
		{"equal keys, distinct ties", 20000, 8, math.MaxInt64, 0.55, 0},
		{"equal keys and ties", 20000, 4, 3, 0.55, 0},
		{"one key", 5000, 1, 1, 0.6, 0},
		{"negative keys", 20000, 1 << 40, 5, 0.5, 0},
		{"grow then drain", 20000, 100, 10, 0.9, 0},
		{"fixes", 20000, 50, 4, 0.5, 0.3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.ops)))
			draw := func(n int64) int64 {
				v := rng.Int64N(n)
				if tt.name == "negative keys" {
					v -= n / 2
				}
				return v
			}
			var h Heap[int]
			var r ref
			for op := range tt.ops {
				drain := tt.name == "grow then drain" && op > tt.ops/2
				switch p := rng.Float64(); {
				case len(h) == 0 || !drain && p < tt.pushShare:
					x := Item[int]{Key: draw(tt.keys), Tie: draw(tt.ties), Val: op}
					h.Push(x)
					stdheap.Push(&r, x)
				case p < tt.pushShare+tt.fixShare:
					k, tie := draw(tt.keys), draw(tt.ties)
					h.Min().Key, h.Min().Tie = k, tie
					r[0].Key, r[0].Tie = k, tie
					h.FixMin()
					stdheap.Fix(&r, 0)
				default:
					got, want := h.Pop(), stdheap.Pop(&r).(Item[int])
					if got != want {
						t.Fatalf("op %d: popped %+v, container/heap %+v", op, got, want)
					}
				}
				if h.Len() != r.Len() {
					t.Fatalf("op %d: %d items, container/heap %d", op, h.Len(), r.Len())
				}
				for i := range h {
					if h[i] != r[i] {
						t.Fatalf("op %d: item %d is %+v, container/heap's %+v", op, i, h[i], r[i])
					}
				}
				if len(h) > 0 && *h.Min() != h[0] {
					t.Fatalf("op %d: Min %+v, h[0] %+v", op, *h.Min(), h[0])
				}
			}
		})
	}
}

// TestSorted: items pushed come out by Key, then Tie.
func TestSorted(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []int64
		ties []int64
		want []int // values (indexes into keys) in the order popped
	}{
		{"empty", nil, nil, nil},
		{"one", []int64{7}, []int64{0}, []int{0}},
		{"by key", []int64{3, 1, 2}, []int64{0, 0, 0}, []int{1, 2, 0}},
		{"ties decide", []int64{5, 5, 5, 1}, []int64{2, 0, 1, 9}, []int{3, 1, 2, 0}},
		{"extremes", []int64{math.MaxInt64, math.MinInt64, 0, math.MinInt64}, []int64{0, 1, 0, 0}, []int{3, 1, 2, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h Heap[int]
			for i := range tt.keys {
				h.Push(Item[int]{Key: tt.keys[i], Tie: tt.ties[i], Val: i})
			}
			var got []int
			for h.Len() > 0 {
				got = append(got, h.Pop().Val)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("popped %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("popped %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestNoAllocations: with spare capacity, Push, Pop and FixMin allocate
// nothing, whatever the value (a pointer, a struct, a bool).
func TestNoAllocations(t *testing.T) {
	type record struct {
		Start, End int64
		Code       uint16
		flags      uint8
	}
	for _, tt := range []struct {
		name string
		run  func() func()
	}{
		{"bool", func() func() {
			h := make(Heap[bool], 0, 64)
			k := int64(0)
			return func() {
				for i := range 32 {
					k = k*6364136223846793005 + 1442695040888963407
					h.Push(Item[bool]{Key: k >> 40, Tie: int64(i), Val: i%2 == 0})
				}
				for h.Len() > 0 {
					h.Pop()
				}
			}
		}},
		{"struct", func() func() {
			h := make(Heap[record], 0, 64)
			k := int64(0)
			return func() {
				for i := range 32 {
					k = k*6364136223846793005 + 1442695040888963407
					h.Push(Item[record]{Key: k >> 40, Tie: int64(i), Val: record{Start: k}})
				}
				for h.Len() > 0 {
					h.Pop()
				}
			}
		}},
		{"pointer, merged", func() func() {
			heads := make([]*record, 8)
			for i := range heads {
				heads[i] = &record{}
			}
			h := make(Heap[*record], 0, len(heads))
			k := int64(0)
			return func() {
				for i, p := range heads {
					h.Push(Item[*record]{Key: int64(i), Tie: int64(i), Val: p})
				}
				for range 64 { // advance the least head, as a merge does
					k = k*6364136223846793005 + 1442695040888963407
					h.Min().Key += k >> 58 & 31
					h.FixMin()
				}
				for h.Len() > 0 {
					h.Pop()
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if a := testing.AllocsPerRun(100, tt.run()); a != 0 {
				t.Errorf("%v allocations a run, want 0", a)
			}
		})
	}
}

// BenchmarkPushPop pushes and pops through a heap of about 64 items.
func BenchmarkPushPop(b *testing.B) {
	type record struct {
		Start, End int64
		Code       uint16
		label      uint32
		answer     uint32
		flags      uint8
	}
	h := make(Heap[record], 0, 128)
	k := int64(0)
	for i := range 64 {
		k = k*6364136223846793005 + 1442695040888963407
		h.Push(Item[record]{Key: k >> 40, Tie: int64(i)})
	}
	b.ReportAllocs()
	i := int64(64)
	for b.Loop() {
		k = k*6364136223846793005 + 1442695040888963407
		h.Push(Item[record]{Key: k >> 40, Tie: i})
		h.Pop()
		i++
	}
}
