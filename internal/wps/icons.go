package wps

import (
	"slices"
	"strings"
)

// IconNames are the icons a process may show beside its name
// (Process.iconName, semantics §14). The console draws each one
// (internal/console/icons.go); docs/console.md shows them.
var IconNames = []string{"alert", "bolt", "box", "calendar", "camera", "cart", "check", "clipboard", "document",
	"factory", "flask", "leaf", "shield", "thermometer", "truck", "user", "wrench"}

// checkIcon accepts no icon, a name of IconNames, or the name the process
// had before (a name stored before the set existed stays until changed).
func checkIcon(v *Validator, name, before string) {
	v.Check(name == "" || name == before || slices.Contains(IconNames, name), "iconName",
		"must be one of: %s (or empty)", strings.Join(IconNames, ", "))
}
