package wps

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// seatHolder goes through seat keys; it must say what the narrowing rule
// says: a user holds a policy's seat at a step when a role of theirs is a
// role of the policy and, where the step narrows the policy's roles, left
// by every roles[{p, r}] entry for it. The actionable index matches the
// same keys in SQL.
func TestSeatKeysAgreeWithNarrowing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := []string{"A", "B", "C", "D"}
	some := func() []string {
		var out []string
		for _, r := range all {
			if rng.IntN(2) == 0 {
				out = append(out, r)
			}
		}
		return out
	}
	for range 5000 {
		pols := []Policy{{Name: "P", Roles: some()}, {Name: "Q", Roles: some()}}
		st := Step{PolicyNames: []string{"P", "Q"}}
		for range rng.IntN(3) {
			st.Roles = append(st.Roles, StepRole{P: []string{"P", "Q"}[rng.IntN(2)], R: some()})
		}
		roles := some()
		var held []Policy
		for _, pol := range pols {
			if Holds(roles, pol) {
				held = append(held, pol)
			}
		}
		holds, roleFor := seatHolder(st, roles, held)
		for _, pol := range pols {
			var want []string // roles of the user that count for pol at st
			for _, r := range pol.Roles {
				ok := slices.Contains(roles, r)
				for _, sr := range st.Roles {
					ok = ok && (sr.P != pol.Name || slices.Contains(sr.R, r))
				}
				if ok {
					want = append(want, r)
				}
			}
			if got := slices.Contains(holds, pol.Name); got != (len(want) > 0) || got && roleFor[pol.Name] != want[0] {
				t.Fatalf("policy %v, step roles %v, user roles %v: holds %v (role %q), want %v", pol, st.Roles, roles, got, roleFor[pol.Name], want)
			}
			if !slices.Equal(countingRoles(st, pol), slices.DeleteFunc(slices.Clone(pol.Roles), func(r string) bool {
				for _, sr := range st.Roles {
					if sr.P == pol.Name && !slices.Contains(sr.R, r) {
						return true
					}
				}
				return false
			})) {
				t.Fatalf("countingRoles %v at %v: %v", pol, st.Roles, countingRoles(st, pol))
			}
		}
	}
}
