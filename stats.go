package subarena

import sasync "github.com/subarena/subarena/sync"

// Stats is a snapshot of the Allocator's memory.
type Stats struct {
	Capacity int64 // arena size (grows in Unbounded mode)
	InUse    int64 // arena bytes not clean: held by the program or waiting to return (granule-rounded)
	Live     int64 // bytes the program holds (buffers not released, minus discarded bytes)
	Held     int64 // bytes released or discarded, not yet returned to the arena
	Pending  int64 // bytes covered by pending users (union over users)
	// PendingPerEngine is Pending split by the engine of the users' events
	// (unknown users are counted in Pending only).
	PendingPerEngine [sasync.MaxEngines]int64
	Free             int64   // clean bytes in the arena
	LargestFree      int64   // largest clean run
	FreeRegions      int     // clean runs
	Fragmentation    float64 // 1 − LargestFree/Free (0 when nothing is free)
	HighWater        int64   // highest end offset ever allocated
	PeakInUse        int64   // highest InUse ever
	Buffers          int     // buffers the program holds
	Users            int     // pending users
}

// Stats returns a snapshot. Every figure is a counter kept up to date by
// the operations that change it: Stats costs O(MaxEngines) whatever the
// number of buffers, users or held runs, so a driver may call it after
// every step.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	as := a.ar.Stats()
	s := Stats{
		Capacity:      as.Capacity,
		InUse:         as.InUse,
		Live:          a.live,
		Held:          a.idx.HeldBytes(),
		Free:          as.Free,
		LargestFree:   as.LargestFree,
		FreeRegions:   as.FreeRegions,
		Fragmentation: as.Fragmentation,
		HighWater:     as.HighWater,
		PeakInUse:     as.PeakInUse,
		Buffers:       len(a.buffers),
		Users:         a.idx.Pending(),
	}
	s.Pending, s.PendingPerEngine = a.idx.PendingBytes()
	return s
}
