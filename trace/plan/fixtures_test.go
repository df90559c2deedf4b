package plan

// The files the tests read: the repository's third-party data (testdata/README.md at the
// root) and this package's own fixtures.
const (
	ggmlTiny = "../../testdata/ggml/ggml-tiny.json"
	// minimallocDir holds the MiniMalloc benchmark instances.
	minimallocDir = "../../testdata/minimalloc"
	// twoBranchesFile holds x feeding two independent branches, each a big temporary
	// reduced to a small result, joined at the end. In the input order the two
	// temporaries are made before either is reduced, so both are live at once
	// (4096-byte temporaries, 256-byte results).
	twoBranchesFile = "testdata/two-branches.json"
	// fusedQKVFile holds a fused projection of four rows [q k v] (64 bytes each):
	// K and V go to external caches, then the scores read the Q rows beside x,
	// held from before the projection to the end.
	fusedQKVFile = "testdata/fused-qkv.json"
	// relaidRopeFile holds the same projection whose Q rows an inplace rope
	// takes over (a strided placement), then the scores, which the K and V
	// copies read too.
	relaidRopeFile = "testdata/relaid-rope.json"
	// heldDiscardFile holds a buffer never released whose first half, a
	// scratch view, is discarded once reduced; its second half is written last.
	heldDiscardFile = "testdata/held-discard.json"
	// inplaceWritesInputFile holds an inplace op that writes its input a
	// and a new buffer b of a's size, a dying there.
	inplaceWritesInputFile = "testdata/inplace-writes-input.json"
	// inplaceReadsOutputFile holds an inplace op o5 that reads b3 and a
	// strided view v4 of b0 and writes b3 and b0 whole: b0, read at o5
	// through v4, is no output o5 may place over the dying b3 (a random
	// trace on which the planner once did, unsafely).
	inplaceReadsOutputFile = "testdata/inplace-reads-output.json"
)
