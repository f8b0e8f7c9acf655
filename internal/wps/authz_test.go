package wps

import "testing"

func TestPrincipalCan(t *testing.T) {
	pol := Policy{Name: "Inspector", Roles: []string{"INSPECTOR"}, Functions: []string{"action:write"}}
	p := &Principal{Roles: []string{"INSPECTOR"}, Policies: []Policy{pol}}
	if !p.Can(FnActionWrite) || p.Can(FnActionApprove) || !p.HoldsPolicy("Inspector") || p.HoldsPolicy("Other") {
		t.Fatal("policy functions not applied")
	}
	admin := &Principal{Roles: []string{RoleAdmin}}
	if !admin.Can(FnLedgerRead) || admin.HoldsPolicy("Inspector") {
		t.Fatal("ADMIN may use every function but holds no policy by that alone")
	}
	if err := (&Principal{}).Require(FnUsersRead); !IsCode(err, CodeForbidden) {
		t.Fatalf("Require: %v", err)
	}
}

func TestValidRole(t *testing.T) {
	for role, ok := range map[string]bool{"ADMIN": true, "A1_B": true, "a": false, "1A": false, "": false, "A B": false} {
		if ValidRole(role) != ok {
			t.Errorf("ValidRole(%q) != %v", role, ok)
		}
	}
}

func TestValidator(t *testing.T) {
	var v Validator
	v.Check(true, "a", "fine")
	if v.Err() != nil {
		t.Fatal("no errors expected")
	}
	v.Add("b", "bad %d", 1)
	v.Add("c", "worse")
	err := v.Err().(*Error)
	if err.Code != CodeInvalid || len(err.Fields) != 2 || err.Message != "b: bad 1 (and 1 more)" {
		t.Fatalf("%+v", err)
	}
}
