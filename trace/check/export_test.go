package check

// The tests that check the checker, LiveLowerBound and trace.LetGo on the plans and schedules
// of the replay (package trace/replay, which imports this one) are external:
// replayed_test.go. These are the test helpers they share with the tests inside.
var (
	RandomPlacements    = randomPlacements
	SameReport          = sameReport
	DenseOffsets        = denseOffsets
	BuildOracle         = buildOracle
	BruteCheck          = bruteCheck
	BruteLiveLB         = bruteLiveLB
	CheckKeys           = checkKeys
	EqualKeys           = equalKeys
	CompareLiveSegments = compareLiveSegments
)
