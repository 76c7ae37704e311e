package learn

import (
	"strings"
	"sync"
	"sync/atomic"
)

// idValues is how many distinct values of one or two digits one path
// position must show, under one prefix, to be taken for an id: /items/5,
// /items/6 and /items/7 are one endpoint; /rest/api/3 keeps its version.
const idValues = 3

// Paths learns which path positions hold short numeric ids, from the
// values seen there. It is per process, bounded to MaxEntries prefixes,
// and safe for concurrent use; the zero Paths is ready to use.
type Paths struct {
	mu sync.RWMutex
	m  map[string]*position
	// version counts the positions taken for ids, and the clears: a
	// template made before it last moved may be out of date.
	version atomic.Uint64
}

// Version is a number that changes whenever a position is taken for ids
// or what was learned is forgotten: a template written while it held the
// same value is still the one IDs would give, for a path whose segments
// were all seen before.
func (ps *Paths) Version() uint64 { return ps.version.Load() }

type position struct {
	vals [idValues - 1]string
	n    int
	id   bool
}

// IDs reports whether the segment seg, after the endpoint template prefix
// ("GET /v1/items"), is at a position that holds ids, and records seg as
// seen there.
func (ps *Paths) IDs(prefix, seg string) bool {
	// Most calls meet a position already settled (an API version seen
	// before): a read lock answers them.
	ps.mu.RLock()
	if pos := ps.m[prefix]; pos != nil {
		if pos.id {
			ps.mu.RUnlock()
			return true
		}
		for _, v := range pos.vals[:pos.n] {
			if v == seg {
				ps.mu.RUnlock()
				return false
			}
		}
	}
	ps.mu.RUnlock()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pos := ps.m[prefix]
	if pos == nil {
		if ps.m == nil || len(ps.m) >= MaxEntries {
			ps.m = make(map[string]*position)
			ps.version.Add(1)
		}
		pos = &position{}
		ps.m[strings.Clone(prefix)] = pos
	}
	if pos.id {
		return true
	}
	for _, v := range pos.vals[:pos.n] {
		if v == seg {
			return false
		}
	}
	if pos.n == len(pos.vals) {
		pos.id = true
		ps.version.Add(1)
		return true
	}
	pos.vals[pos.n] = strings.Clone(seg)
	pos.n++
	return false
}
