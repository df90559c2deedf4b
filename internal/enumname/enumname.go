// Package enumname formats the module's small enumerations from name
// tables indexed by value.
package enumname

import "fmt"

// Name returns names[v] when v indexes a non-empty entry, and otherwise
// typ(v), for example "Fit(7)": the String method of an enumeration whose
// values are small integers.
func Name[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}
