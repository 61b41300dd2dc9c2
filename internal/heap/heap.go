// Package heap is a binary min-heap of items, each a value with the two
// int64 keys it is ordered by (Key, then Tie): the fit's answered requests
// by response, the spill's reorder buffer and its merge of files by send.
//
// It is generic over the value only. The keys are plain integers compared
// with <, so the comparisons are compiled into the sifts whatever the value
// is, and nothing goes through an interface or a method of the value:
// through container/heap's interface every push and pop was an allocation,
// and a Less method of the value, called through the generic dictionary,
// is a call a comparison, never inlined. Push and Pop allocate nothing
// while the slice has spare capacity.
//
// The sifts are container/heap's, so items of equal keys come out in the
// order container/heap would give them; a user who needs an order on ties
// makes Tie unique (a place in a file, an index).
package heap

// Item is a value with the keys it is ordered by: Key, then Tie. The value
// comes first: a struct ending in a field of no size is padded, so an item
// of struct{} is two words, not three.
type Item[V any] struct {
	Val V     // what the item carries, never compared
	Key int64 // the first key: the smaller comes out first
	Tie int64 // the second key, between items of equal Key
}

// less reports whether a comes out before b.
func less[V any](a, b *Item[V]) bool {
	return a.Key < b.Key || a.Key == b.Key && a.Tie < b.Tie
}

// Heap is a min-heap of items: h[0] is the least, by Key then Tie. The
// zero value is an empty heap. Its items may be read in place; the least
// item's keys may be changed in place, then put right with FixMin.
type Heap[V any] []Item[V]

// Len returns the number of items.
func (h Heap[V]) Len() int { return len(h) }

// Min returns the least item, without taking it out. The heap must not be
// empty.
func (h Heap[V]) Min() *Item[V] { return &h[0] }

// Push adds x.
func (h *Heap[V]) Push(x Item[V]) {
	*h = append(*h, x)
	q := *h
	q.up(len(q) - 1)
}

// Pop takes out the least item and returns it. The heap must not be
// empty.
func (h *Heap[V]) Pop() Item[V] {
	q := *h
	n := len(q) - 1
	x := q[0]
	q[0] = q[n]
	q[n] = Item[V]{} // the slice no longer holds what Val points to
	q = q[:n]
	*h = q
	// FixMin's sift, written out: Pop is called once a record, and calling
	// FixMin would be a second call each time.
	for i := 0; ; {
		j := 2*i + 1
		if j >= n || j < 0 { // j < 0 after an int overflow
			break
		}
		if j2 := j + 1; j2 < n && less(&q[j2], &q[j]) {
			j = j2 // the lesser child
		}
		if !less(&q[j], &q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	return x
}

// FixMin puts the heap right after the keys of the least item, h[0],
// changed: what a k-way merge does to the head it advanced, what a top-k
// does to the least item it replaced.
func (h Heap[V]) FixMin() {
	n := len(h)
	for i := 0; ; {
		j := 2*i + 1
		if j >= n || j < 0 { // j < 0 after an int overflow
			break
		}
		if j2 := j + 1; j2 < n && less(&h[j2], &h[j]) {
			j = j2 // the lesser child
		}
		if !less(&h[j], &h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// up moves item j towards the root while it is less than its parent.
func (h Heap[V]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !less(&h[j], &h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}
