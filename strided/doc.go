// Package strided describes tensor views as strided layouts over a buffer and answers the
// two questions the allocator asks of them: which bytes does a view cover, and do two views
// share a byte.
//
// Design essay to follow.
package strided
