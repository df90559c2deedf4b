// Package tracefile reads a trace or a plan from bytes or a file whatever its format,
// telling the format by content, not by name: a subarena-trace/v1 document (package
// trace), a ggml graph-allocator trace (package trace/ggmltrace) or a MiniMalloc CSV
// (package trace/minimalloc). It is the reader every command and tool uses; it sits
// above the format and the importers, which do not import it.
//
// # Detection
//
// Detect looks at as little as it needs: a JSON object by its "format" key
// (trace.FormatKey), a MiniMalloc CSV by its header row (minimalloc.Header); a leading
// UTF-8 byte order mark is skipped. Any other input is rejected with an error matching
// trace.ErrUnknownFormat that says what the input looks like (empty, white space, binary,
// a JSON array, text that is no MiniMalloc header, a JSON object without a "format"
// key), and a "format" naming another format or version with one matching
// trace.ErrFormat too. A JSON object malformed before its "format" key gets the
// *trace.StepError trace.Parse would give, with its line and column.
//
// # Reading
//
// Read and Load detect, then parse or import: every trace they return is validated and
// normalized, and the trace of a CSV or ggml file is named after the file. ReadProgram
// and LoadProgram return the resolved trace.Program at the cost of reading alone
// (validating a trace resolves it). ReadPlan and LoadPlan read a plan in either form a
// plan comes in: a subarena-plan/v1 document or a MiniMalloc CSV with an offset column.
package tracefile
