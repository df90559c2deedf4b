// Package apiaudit holds a test that keeps the module's exported surface
// honest: every exported top-level identifier of a library package is
// either used outside its package (by another package, a command, an
// example program or a nested module) or is documented API.
//
// An identifier counts as documented API when any of these holds:
//   - it is an error sentinel (a package-level variable named Err...) or an
//     error type a caller matches with errors.As (a type named ...Error);
//   - it appears in the declaration of another exported name of its package
//     (a parameter, result, field or element type, or a constant's type), so
//     a caller meets it through that name;
//   - it is a constant or variable of an exported type declared in the same
//     package, or a constant of a group declaring one (the values of an
//     enum);
//   - a runnable example (a func Example... in a _test.go file of the
//     package) uses it;
//   - the package comment names it.
//
// Anything else is an implementation detail that should not be exported;
// the test lists each with its file and line. Packages named main, test
// files and testdata are not audited; every .go file of the repository
// (nested modules included) counts as a user.
package apiaudit
