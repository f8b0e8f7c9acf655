package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path"
)

// seeded is what the load needs: keys, the process and its first step.
type seeded struct {
	adminKey, inspector, supervisor string
	orgID, processID, inspectID     string
	// spread are processes of the same definition, processID first: creates
	// spread over them take different per-process numbers.
	spread []string
}

// spreadProcesses is how many processes the spread creates go to.
const spreadProcesses = 8

// seedOrg creates two policies (ordered approval), an inspector and a
// supervisor, and a 5-step process whose first step has 8 parameters,
// among them a SELECT and a formula.
func seedOrg(c *client) (*seeded, error) {
	s := &seeded{adminKey: bootstrapKey}
	fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "process:read"}
	for _, p := range []struct{ name, role string }{{"Inspector", "INSPECTOR"}, {"Supervisor", "SUPERVISOR"}} {
		if _, err := c.do("POST", "/v1/users/policies", s.adminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, nil); err != nil {
			return nil, err
		}
	}
	member := func(email, role string) (string, error) {
		var inv struct{ Token string }
		if _, err := c.do("POST", "/v1/invites", s.adminKey, map[string]any{"email": email, "roles": []string{role}}, &inv); err != nil {
			return "", err
		}
		var acc struct{ APIKey struct{ Key string } }
		_, err := c.do("POST", "/v1/invites/accept", "", map[string]any{"token": inv.Token}, &acc)
		return acc.APIKey.Key, err
	}
	var err error
	if s.inspector, err = member("inspector@bench.example", "INSPECTOR"); err != nil {
		return nil, err
	}
	if s.supervisor, err = member("supervisor@bench.example", "SUPERVISOR"); err != nil {
		return nil, err
	}
	var me struct{ OrgID string }
	if _, err := c.do("GET", "/v1/users/me", s.adminKey, nil, &me); err != nil {
		return nil, err
	}
	s.orgID = me.OrgID
	for i := range spreadProcesses {
		var proc struct {
			ID    string
			Steps []struct{ ID string }
		}
		if _, err = c.do("POST", "/v1/process", s.adminKey, inspection(i), &proc); err != nil {
			return nil, err
		}
		if i == 0 {
			s.processID, s.inspectID = proc.ID, proc.Steps[0].ID
		}
		s.spread = append(s.spread, proc.ID)
	}
	return s, nil
}

// inspection is the definition of the i-th process seeded.
func inspection(i int) map[string]any {
	name, code := "Pressure vessel inspection", "PVI"
	if i > 0 {
		name, code = fmt.Sprintf("%s %d", name, i+1), fmt.Sprintf("PVI%d", i+1)
	}
	return map[string]any{
		"name": name, "code": code,
		"steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Inspector", "Supervisor"}, "orderedPolicies": []string{"Inspector", "Supervisor"},
				"deadline": "48", "deadlineType": "HOURS",
				"parameters": []map[string]any{
					{"name": "asset", "type": "TEXT", "isRequired": true, "advancedOptions": map[string]any{"maxLength": 40}},
					{"name": "kind", "type": "SELECT", "isRequired": true, "optionItems": []map[string]any{{"value": "ok"}, {"value": "repair"}, {"value": "replace"}}},
					{"name": "pressure", "type": "NUMBER", "decimals": 1, "advancedOptions": map[string]any{"min": 0, "max": 400}},
					{"name": "temperature", "type": "NUMBER", "decimals": 1},
					{"name": "hours", "type": "NUMBER", "decimals": 2},
					{"name": "rate", "type": "NUMBER", "decimals": 2},
					{"name": "cost", "type": "FORMULA", "computedFormula": []string{"hours", "*", "rate"}, "decimals": 2},
					{"name": "notes", "type": "LONG_TEXT"},
				}},
			{"label": "Repair", "policyNames": []string{"Inspector"}},
			{"label": "Verify", "policyNames": []string{"Supervisor"}},
			{"label": "Report", "policyNames": []string{"Inspector"}},
			{"label": "Close", "policyNames": []string{"Supervisor"}},
		},
	}
}

// create is the inspector's simplified creation with data on the first
// step of processID.
func (s *seeded) create(c *client, rng *rand.Rand, processID string) (string, int, error) {
	res, err := c.send("POST", "/v1/measurements/simplified", s.inspector, map[string]any{
		"processUuid": processID,
		"parameters":  createValues(rng),
	})
	if res == nil || err != nil {
		return "", status(res), err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body) // the id is in Location: no need to decode the answer
	return path.Base(res.Header.Get("Location")), res.StatusCode, err
}

// approve is the supervisor's ordered approval of the first step.
func (s *seeded) approve(c *client, id string) (int, error) {
	return c.do("POST", "/v1/measurements/"+id+"/actions", s.supervisor, map[string]any{"stepId": s.inspectID, "type": "APPROVAL"}, nil)
}

// createValues are the values of a create: the first step's, but its formula.
func createValues(rng *rand.Rand) map[string]any {
	return map[string]any{
		"asset": fmt.Sprintf("PV-%04d", rng.IntN(10000)), "kind": []string{"ok", "repair", "replace"}[rng.IntN(3)],
		"pressure": float64(rng.IntN(4000)) / 10, "temperature": 20 + float64(rng.IntN(600))/10,
		"hours": 1 + float64(rng.IntN(800))/100, "rate": 45.5, "notes": "routine inspection, no leaks found",
	}
}
