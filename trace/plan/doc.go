// Package plan is subarena's offline planner: given every future use of
// every buffer, it assigns each buffer an offset in one arena so that no two
// buffers share a byte while both are live, and the arena is as small as it
// can be made within a time budget.
package plan
