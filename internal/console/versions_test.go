package console

import (
	"fmt"
	"testing"

	"wps/internal/wps"
)

func TestCompareSteps(t *testing.T) {
	a := []wps.Step{
		{ID: "s1", Label: "Inspect", PolicyNames: []string{"Inspector"}, Parameters: []wps.Parameter{
			{ID: "p1", Name: "temp", Type: "NUMBER"}, {ID: "p2", Name: "notes", Type: "TEXT"}}},
		{ID: "s2", Label: "Review", StepIDsDependencies: []string{"s1"}},
	}
	b := []wps.Step{
		{ID: "s1", Label: "Inspect", PolicyNames: []string{"Inspector", "Supervisor"}, Parameters: []wps.Parameter{
			{ID: "p1", Name: "temp", Label: "Temperature", Type: "NUMBER", IsRequired: true}, {ID: "p3", Name: "photo", Type: "ATTACHMENT"}}},
		{ID: "s3", Label: "Sign off", StepIDsDependencies: []string{"s1"}},
	}
	got := fmt.Sprint(compareSteps(a, b))
	want := "[{changed Inspect [{policyNames [\"Inspector\"] [\"Inspector\",\"Supervisor\"]}] " +
		"[{changed Temperature (temp) [{isRequired  true} {label  Temperature}] []} {added photo [{name  photo} {type  ATTACHMENT}] []} {removed notes [] []}]} " +
		"{added Sign off [{label  Sign off} {stepIdsDependencies  [\"Inspect\"]}] []} {removed Review [] []}]"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if d := compareSteps(a, a); len(d) != 0 {
		t.Fatalf("the same steps differ: %v", d)
	}
}
