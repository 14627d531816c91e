package ebpf

import "sort"

// span is a run of backend slots.
type span struct{ base, n uint32 }

// allocator hands out contiguous runs of backend slots below size. A
// Service keeps its run while its endpoints do not change, so a Program
// only writes what changed and never moves a live Service's slots
// (make-before-break: a changed Service gets a new run, its entry is
// switched, then the old run is freed).
type allocator struct {
	size uint32
	next uint32 // slots >= next were never handed out
	free []span // freed runs below next, sorted by base, merged
}

// alloc returns the base of n free slots, or false if no run is long enough.
func (a *allocator) alloc(n uint32) (uint32, bool) {
	if n == 0 {
		return 0, true
	}
	for i, f := range a.free {
		if f.n >= n {
			if f.n == n {
				a.free = append(a.free[:i], a.free[i+1:]...)
			} else {
				a.free[i] = span{f.base + n, f.n - n}
			}
			return f.base, true
		}
	}
	if a.size-a.next < n {
		return 0, false
	}
	b := a.next
	a.next += n
	return b, true
}

// release gives n slots at base back.
func (a *allocator) release(base, n uint32) {
	if n == 0 {
		return
	}
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].base > base })
	a.free = append(a.free, span{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = span{base, n}
	// Merge with the following, then the preceding run.
	if i+1 < len(a.free) && a.free[i].base+a.free[i].n == a.free[i+1].base {
		a.free[i].n += a.free[i+1].n
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].base+a.free[i-1].n == a.free[i].base {
		a.free[i-1].n += a.free[i].n
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	// A run ending at next goes back to the never-used space.
	if last := a.free[len(a.free)-1]; last.base+last.n == a.next {
		a.next = last.base
		a.free = a.free[:len(a.free)-1]
	}
}

// reset forgets every allocation (for a full relayout).
func (a *allocator) reset(size uint32) { *a = allocator{size: size} }
