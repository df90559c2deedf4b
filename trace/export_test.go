package trace

// The decoder's fast path and its strict reading, for the external tests
// that hold them to each other on the documents trace/internal/tracetest
// generates (that package imports this one, so those tests cannot be in
// package trace).
var (
	DecodeFast   = decodeFast
	DecodeStrict = decodeStrict
	Locate       = locate
)
