package sync

import "fmt"

// Access is how an op uses bytes: it reads them, writes them, or both. The
// root package (subarena.Access) and package trace (trace.Access) name this
// type.
type Access uint8

// Accesses; AccessReadWrite is both.
const (
	AccessRead      Access = 1
	AccessWrite     Access = 2
	AccessReadWrite        = AccessRead | AccessWrite
)

// accessNames holds the name of each Access, indexed by value.
var accessNames = [...]string{AccessRead: "read", AccessWrite: "write", AccessReadWrite: "read-write"}

// String returns "read", "write" or "read-write".
func (a Access) String() string {
	if int(a) < len(accessNames) && accessNames[a] != "" {
		return accessNames[a]
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}
