package bench

import (
	"errors"
	"strconv"
)

// Sentinels for bad input to the workload generators and the matrix. The
// errors returned wrap them: callers match them with errors.Is.
var (
	// ErrInvalidWorkload: a workload configuration is out of range.
	ErrInvalidWorkload = errors.New("bench: invalid workload configuration")
	// ErrUnknownWorkload: no built-in workload has the given name.
	ErrUnknownWorkload = errors.New("bench: unknown workload")
)

func itoa(i int) string { return strconv.Itoa(i) }
