package trace

import (
	"fmt"
	"io"

	sasync "github.com/subarena/subarena/sync"
)

// The documented limits of the formats (docs/TRACE.md, "Limits"). Every reader and every
// command applies the same ones, through Resolve (a subarena trace, and the traces the
// importers build) and the MiniMalloc reader (package trace/minimalloc), so that replay,
// check and plan accept and refuse the same inputs. A refusal matches ErrLimit and names
// the limit.
const (
	// MaxDocumentSize is the most bytes a trace or plan document may have: 1 GiB. A
	// reader stops after MaxDocumentSize+1 bytes and refuses the input, so an endless
	// input (a device, a pipe) costs bounded memory.
	MaxDocumentSize = 1 << 30
	// MaxGranule is the largest granule: 2^30 bytes.
	MaxGranule = 1 << 30
	// MaxGranules is the most granules an arena may span: 2^32, so that a granule index
	// fits 32 bits.
	MaxGranules = 1 << 32
	// MaxArena is the most bytes an arena may span: 1 TiB (2^32 granules of the default
	// 256 bytes).
	MaxArena = 1 << 40
	// MaxEngines is the most engines a trace may have: 16, the width of the vector
	// clocks that order their ops (package sync).
	MaxEngines = sasync.MaxEngines
)

// ArenaLimit returns the most bytes an arena of the given granule may span, and so the
// largest buffer and the most bytes live at once a trace of that granule may have: the
// lesser of MaxArena and MaxGranules granules. A MiniMalloc CSV whose sizes are not all
// even has granule 1, and so a limit of 4 GiB. granule must be a power of two up to
// MaxGranule.
func ArenaLimit(granule int64) int64 {
	return min(MaxArena, MaxGranules*granule)
}

// checkGranule returns nil for a granule this format accepts, a power of two up to
// MaxGranule; an error matching ErrInvalidGranule for one that is no power of two, and
// one matching ErrLimit for a power of two above MaxGranule.
func checkGranule(granule int64) error {
	switch {
	case granule <= 0 || granule&(granule-1) != 0:
		return fmt.Errorf("%w: %d", ErrInvalidGranule, granule)
	case granule > MaxGranule:
		return fmt.Errorf("%w: granule %d is above the limit of %d B (2^30)", ErrLimit, granule, int64(MaxGranule))
	}
	return nil
}

// CheckArenaBytes returns nil when n bytes, rounded up to the granule, fit an arena of
// that granule (ArenaLimit), and otherwise an error matching ErrLimit that names what
// (what: "buffer \"a\" of 5000000000 B", say) and the limit.
func CheckArenaBytes(what string, n, granule int64) error {
	limit := ArenaLimit(granule)
	if n <= limit {
		return nil
	}
	return fmt.Errorf("%w: %s is above the arena limit of %d B (%s)", ErrLimit, what, limit, arenaLimitText(granule))
}

// arenaLimitText says which limit ArenaLimit(granule) is.
func arenaLimitText(granule int64) string {
	if MaxGranules*granule < MaxArena {
		return fmt.Sprintf("2^32 granules of %d B", granule)
	}
	return "1 TiB"
}

// ReadDocumentAfter reads the rest of a document whose first bytes, head, were read
// already, and returns head followed by the rest of r. It refuses a document of more than
// MaxDocumentSize bytes with an error matching ErrLimit, having read no more than one
// byte past the limit.
func ReadDocumentAfter(head []byte, r io.Reader) ([]byte, error) {
	return readLimited(head, r, MaxDocumentSize)
}

// readLimited is ReadDocumentAfter with limit for MaxDocumentSize.
func readLimited(head []byte, r io.Reader, limit int64) ([]byte, error) {
	rest, err := io.ReadAll(io.LimitReader(r, limit+1-int64(len(head))))
	data := append(head[:len(head):len(head)], rest...)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: the input is larger than the %d B (%s) a document may have", ErrLimit, limit, sizeText(limit))
	}
	return data, nil
}

// sizeText writes a power-of-two size in the largest binary unit that divides it.
func sizeText(n int64) string {
	for _, u := range []struct {
		name  string
		bytes int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return fmt.Sprintf("%d %s", n/u.bytes, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
