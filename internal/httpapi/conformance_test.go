package httpapi_test

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// The shapes of interface.md, field by field, with the JSON type of each:
// s string, n number, b boolean, a array, o object, * any; a trailing ?
// allows null. A field the interface gives no type ("type not shown") is *.
var shapes = map[string]map[string]string{
	"Process": fields("id name label iconName orgId code createdAt updatedAt:s", "deletedAt:s?", "steps:a"),
	"Step": fields("id label description prompt processId webhookUrls legalContractId frequency deadline deadlineType frequencyDate createdAt updatedAt:s",
		"deletedAt:s?", "tokenIds policyNames roles orderedPolicies viewPolicyNames stepIdsReprovalDependencies stepIdsDependencies:a", "routing:o?"),
	"StepRole":    fields("p:s", "r:a"),
	"Routing":     fields("entityParamName entityId:s", "rules:a"),
	"RoutingRule": fields("value stepId:s"),
	"MeasurementStep": fields("id label description prompt processId webhookUrls legalContractId frequency deadline deadlineType frequencyDate createdAt updatedAt:s",
		"deletedAt:s?", "tokenIds policyNames roles orderedPolicies viewPolicyNames stepIdsReprovalDependencies stepIdsDependencies parameters:a",
		"routing:o?", "entity:o?", "hasGSheetKey:b"),
	"CurrentStep":  fields("id label processId:s", "parameters:a", "hasGSheetKey hasGSheetInputParameter:b"),
	"StepEntity":   fields("label:s", "params:a", "hasGSheetKey:b"),
	"ProcessEmbed": fields("id name type iconName orgId:s", "steps actions:a"),
	"MeasurementAction": fields("id stepId actionId measurementId tokenId createdAt updatedAt username userId role observation transactionHash userAddress type:s",
		"userRoles data counterpartsPoliciesRoles:a"),
	"Counterpart":     fields("name:s", "data:a"),
	"CounterpartSeat": fields("permission tokenId role:s"),
	"Measurement":     fields("id measurementId name orgId processId status createdAt updatedAt:s", "reservedTokens:a"),
	"ReservedToken":   fields("policyName tokenId:s"),
	"Simplified": fields("stepId actionId id name processId orgId status createdAt updatedAt webhookUrls:s", "isStepConsensed:b",
		"readFromEntityMapping measurementDefinition entitiesById process:o", "currentStep:o?",
		"entityDataItems entityManipulations unfilledPolicies pendingPolicies:a"),
	"ReadMapping":           fields("actions entity:o"),
	"MeasurementDefinition": fields("id measurementId createdAt:s", "tokenIds reservedTokens availableTokens:a"),
	"AvailableTokens":       fields("policyName:s", "tokenIds:a"),
	"EntityData":            fields("entityId:s", "data:a"),
	"Unfilled":              fields("stepId nextUnfilledPolicy:s", "unfilledPolicies:a"),
	"ReproveAction": fields("id tokenId type userAddress username transactionHash observation measurementId stepId createdAt:s",
		"step measurement:o", "data:a", "currentStep:o?"),
	"ReproveStep":   fields("id label processId:s", "process:o"),
	"ProcessRef":    fields("id processId name label iconName orgId createdAt updatedAt:s"),
	"Data":          fields("id actionId stepId parameterId entityParameterId:s", "dataItems:a"),
	"ReproveData":   fields("id actionId stepId parameterId:s", "hasGSheetKey:b", "dataItems:a"),
	"DataItem":      fields("id label value type dataItemId parameterId dataId:s", "index:n", "param:o"),
	"TableDataItem": fields("id label type dataItemId parameterId dataId:s", "index:n", "param:o", "dataItems:a"),
	"Parameter": fields("advancedOptions sheetData readFromOtherMeasurementData readFromEntity:o", "computedFormula parameterId:*", "decimals index:n",
		"id label name contractTemplateId readFromOtherMeasurementDataId stepId entityId type:s", "isPermanent isRequired isUnique:b",
		"optionItems showColumns apiCalls parameters:a"),
	"NestedParameter": fields("id name label stepId type:s", "isUnique isPermanent isRequired:b", "decimals:n", "computedFormula parameterId:*",
		"optionItems:a", "sheetData advancedOptions:o"),
	"ApiCallLink": fields("id apiCallId parameterId createdAt:s", "apiCall parameter:o"),
	"StepParameter": fields("id name label description parameterId stepId entityId type autoFillEntityRelation contractTemplateId:s",
		"isUnique isPermanent isRequired:b", "decimals:n", "entityOperation showColumns viewColumns computedFormula optionItems apiCalls parameters:a",
		"contractTemplate readFromOtherMeasurementData readFromEntity sheetData advancedOptions:o"),
	// Columns also list autoFillEntityRelation and readFromOtherMeasurementData;
	// what fills a step's parameters does not apply to the cells of a row, so
	// a column with either is refused at save (422) and never carries them.
	"NestedStepParameter": fields("id name label type stepId parameterId createdAt updatedAt:s", "isUnique isPermanent isRequired:b",
		"decimals:n", "computedFormula optionItems:a", "sheetData advancedOptions:o"),
	"ContractTemplate": fields("templateEntityId templateEntityName:s"),
	"AdvancedOptions": fields("id tooltip description placeholder currency locale dateFormat insertOnEntity parameterId entityParameterId createdAt updatedAt:s",
		"deletedAt:s?", "max maxLength min minLength decimals sort:n", "isHidden rightFreeze leftFreeze hasCustomColor hasMetadata isMultiple:b",
		"hiddenFrom insertOnEntityMetadata entityOperation:a"),
	"SheetData":                    fields("sheetApiId id cell inputType parameterId entityId entityParameterId page formula:s"),
	"ReadFromOtherMeasurementData": fields("processId stepId id parameterId readParameterId searchFieldId:s", "selectedFields:a"),
	"SelectedField":                fields("readParameterId writeParameterId:s"),
	"ReadFromEntity":               fields("stepId id processId entityId readParameterId originParameterId createdAt updatedAt:s", "targetParameterIds:a"),
	"OptionItem":                   fields("value id label color parameterId entityParameterId createdAt updatedAt:s", "deletedAt:s?", "meta:o", "persisted:b"),
	"ApiCall":                      fields("id type description createdAt updatedAt:s", "sort parameters:a"),
}

// fields reads "name name:type" groups into a shape.
func fields(groups ...string) map[string]string {
	out := map[string]string{}
	for _, g := range groups {
		names, typ, _ := strings.Cut(g, ":")
		for _, n := range strings.Fields(names) {
			out[n] = typ
		}
	}
	return out
}

// conformance collects, for each shape, the fields seen and type errors.
type conformance struct {
	seen   map[string]map[string]bool
	errors []string
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "s"
	case float64:
		return "n"
	case bool:
		return "b"
	case []any:
		return "a"
	case map[string]any:
		return "o"
	}
	return "?"
}

// check records an instance of shape at path.
func (c *conformance) check(shape, path string, v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		c.errors = append(c.errors, fmt.Sprintf("%s (%s) is %s, not an object", path, shape, jsonType(v)))
		return nil
	}
	if c.seen[shape] == nil {
		c.seen[shape] = map[string]bool{}
	}
	for field, want := range shapes[shape] {
		got, present := m[field]
		if !present {
			continue
		}
		c.seen[shape][field] = true
		typ := jsonType(got)
		nullable := strings.HasSuffix(want, "?")
		want = strings.TrimSuffix(want, "?")
		if want != "*" && typ != want && !(typ == "null" && nullable) {
			c.errors = append(c.errors, fmt.Sprintf("%s.%s (%s) is %s, want %s", path, field, shape, typ, shapes[shape][field]))
		}
	}
	return m
}

// each checks every item of m[field] as shape.
func (c *conformance) each(shape, path string, m map[string]any, field string, then func(string, map[string]any)) {
	list, _ := m[field].([]any)
	for i, item := range list {
		p := fmt.Sprintf("%s.%s[%d]", path, field, i)
		if o := c.check(shape, p, item); o != nil && then != nil {
			then(p, o)
		}
	}
}

// one checks m[field] as shape when it is an object.
func (c *conformance) one(shape, path string, m map[string]any, field string, then func(string, map[string]any)) {
	if v, ok := m[field].(map[string]any); ok {
		if o := c.check(shape, path+"."+field, v); o != nil && then != nil {
			then(path+"."+field, o)
		}
	}
}

func (c *conformance) step(path string, st map[string]any) {
	c.each("StepRole", path, st, "roles", nil)
	c.one("Routing", path, st, "routing", func(p string, r map[string]any) { c.each("RoutingRule", p, r, "rules", nil) })
}

func (c *conformance) parts(path string, prm map[string]any) {
	c.one("AdvancedOptions", path, prm, "advancedOptions", nil)
	c.one("SheetData", path, prm, "sheetData", nil)
	c.one("ReadFromEntity", path, prm, "readFromEntity", nil)
	c.one("ReadFromOtherMeasurementData", path, prm, "readFromOtherMeasurementData", func(p string, r map[string]any) {
		c.each("SelectedField", p, r, "selectedFields", nil)
	})
	c.one("ContractTemplate", path, prm, "contractTemplate", nil)
	c.each("OptionItem", path, prm, "optionItems", nil)
}

func (c *conformance) param(path string, prm map[string]any) {
	c.parts(path, prm)
	c.each("ApiCallLink", path, prm, "apiCalls", func(p string, l map[string]any) { c.one("ApiCall", p, l, "apiCall", nil) })
	c.each("NestedParameter", path, prm, "parameters", func(p string, col map[string]any) { c.parts(p, col) })
}

func (c *conformance) stepParam(path string, prm map[string]any) {
	c.parts(path, prm)
	c.each("ApiCall", path, prm, "apiCalls", nil)
	c.each("NestedStepParameter", path, prm, "parameters", func(p string, col map[string]any) { c.parts(p, col) })
}

func (c *conformance) data(shape, path string, a map[string]any) {
	c.each(shape, path, a, "data", func(p string, d map[string]any) {
		c.dataItems(p, d)
	})
}

func (c *conformance) dataItems(path string, d map[string]any) {
	list, _ := d["dataItems"].([]any)
	for i, it := range list {
		p := fmt.Sprintf("%s.dataItems[%d]", path, i)
		item, _ := it.(map[string]any)
		shape := "DataItem"
		if item != nil && item["type"] == "TABLE" {
			shape = "TableDataItem"
		}
		if o := c.check(shape, p, it); o != nil {
			c.one("Parameter", p, o, "param", c.param)
			c.dataItems(p, o)
		}
	}
}

func (c *conformance) measurementSteps(path string, proc map[string]any) {
	c.each("MeasurementStep", path, proc, "steps", func(p string, st map[string]any) {
		c.step(p, st)
		c.one("StepEntity", p, st, "entity", nil)
		c.each("StepParameter", p, st, "parameters", c.stepParam)
	})
	c.each("MeasurementAction", path, proc, "actions", func(p string, a map[string]any) {
		c.data("Data", p, a)
		c.each("Counterpart", p, a, "counterpartsPoliciesRoles", func(p string, cp map[string]any) { c.each("CounterpartSeat", p, cp, "data", nil) })
	})
}

// A client's walk through every shape of interface.md, on a process that
// uses every option: each field must appear (in at least one instance of
// its shape) and always with its JSON type.
func TestConformance(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		rs := newRateServer(t)
		env := tu.NewEnv(t, engine, tu.Options{APICalls: apiCalls(t)})
		for _, pol := range []map[string]any{
			{"name": "Admins", "roles": []string{"ADMIN"}},
			{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": []string{"action:write", "measurement:read"}},
			{"name": "Auditor", "roles": []string{"AUDITOR"}, "functions": []string{"measurement:read"}},
		} {
			env.Call(post, "/v1/users/policies", env.AdminKey, pol, 201)
		}
		env.Call(post, "/v1/roles/assign", env.AdminKey, map[string]any{"role": "INSPECTOR", "userId": env.Call(get, "/v1/users/me", env.AdminKey, nil, 200).JSON()["id"]}, 200)
		book := excelize.NewFile()
		_ = book.SetCellValue("Sheet1", "A1", 5)
		var bookBytes bytes.Buffer
		_ = book.Write(&bookBytes)
		sheetID := uploadTo(t, env, "/v1/sheets", env.AdminKey, "file", "c.xlsx", bookBytes.Bytes()).JSON()["id"]
		asset := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Asset", "parameters": []map[string]any{
			{"name": "tag", "type": "TEXT", "isUnique": true},
			{"name": "score", "type": "NUMBER", "sheetData": map[string]any{"sheetApiId": sheetID, "cell": "B1", "page": "Sheet1", "inputType": "OUTPUT", "formula": "=A1*2"}},
			{"name": "site", "type": "SELECT", "optionItems": []map[string]any{{"value": "north", "color": "#00AA00", "meta": map[string]any{"region": "N"}}},
				"advancedOptions": map[string]any{"tooltip": "where"}},
			{"name": "rating", "type": "TEXT"}}}, 201).JSON()
		rec := env.Call(post, "/v1/entities/"+asset["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"tag": "P-1", "site": "north", "rating": "A"}}, 201).JSON()
		env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Log", "p": []map[string]any{{"n": "note", "t": "TEXT"}, {"n": "measurementId", "t": "TEXT"}}}, 201)
		env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Vendor", "steps": []map[string]any{
			{"label": "Register", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "taxId", "type": "TEXT"}, {"name": "bank", "type": "TEXT"}}}}}, 201)
		for _, name := range []string{"c-1", "ct-1"} {
			env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": name, "body": "# Asset {{entity tag}}\n\nAmount: {{param amount}}", "templateEntityId": "Asset"}, 201)
		}
		// Every advanced option, each on a parameter of a type it acts on.
		every := map[string]any{"tooltip": "t", "description": "d", "placeholder": "p", "maxLength": 10, "minLength": 0, "decimals": 2,
			"sort": 1, "locale": "pt-BR", "isHidden": true, "rightFreeze": true, "leftFreeze": true,
			"hasCustomColor": true, "hasMetadata": true, "isMultiple": false, "hiddenFrom": []string{"Auditor"}, "insertOnEntity": "Log",
			"insertOnEntityMetadata": []string{"measurementId"}, "entityParameterId": "x"}
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Inspection", "iconName": "wrench", "steps": []map[string]any{
			{"label": "Inspect", "description": "look", "prompt": "go", "policyNames": []string{"Inspector"}, "orderedPolicies": []string{"Inspector"},
				"roles": []map[string]any{{"p": "Inspector", "r": []string{"INSPECTOR"}}}, "viewPolicyNames": []string{"Inspector"},
				"webhookUrls": "http://127.0.0.1:9/hook", "legalContractId": "c-1", "deadline": "24", "deadlineType": "HOURS",
				"frequency": "WEEKLY", "frequencyDate": "2026-01-05T08:00:00Z",
				"routing": map[string]any{"entityParamName": "site", "entityId": "Asset", "rules": []map[string]any{{"value": "north", "stepId": "Close"}, {"value": "*", "stepId": "Close"}}},
				"parameters": []map[string]any{
					{"name": "asset", "type": "ENTITY", "entityId": "Asset", "description": "which", "showColumns": []string{"tag"}, "viewColumns": []string{"tag"}},
					{"name": "logged", "type": "ENTITY", "entityId": "Log", "entityOperation": []string{"WRITE"}, "advancedOptions": map[string]any{"entityOperation": []string{"WRITE"}}},
					{"name": "due", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy"}},
					{"name": "contract", "type": "TEXT", "contractTemplateId": "ct-1", "contractTemplate": map[string]any{"templateEntityId": "Asset", "templateEntityName": "Asset"}},
					{"name": "site", "type": "SELECT", "autoFillEntityRelation": "asset", "optionItems": []map[string]any{{"value": "north", "color": "#00AA00", "meta": map[string]any{"r": 1}}}},
					{"name": "tagText", "type": "TEXT", "readFromEntity": map[string]any{"entityId": "Asset", "readParameterId": "tag", "targetParameterIds": []string{"rating"}},
						"sheetData": map[string]any{"sheetApiId": sheetID, "cell": "B2", "page": "Sheet1", "inputType": "INPUT", "entityParameterId": "ep"}},
					{"name": "rating", "type": "TEXT"},
					{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor", "searchFieldId": "taxId", "readParameterId": "bank",
						"selectedFields": []map[string]any{{"readParameterId": "bank", "writeParameterId": "note"}}}},
					{"name": "bank", "type": "TEXT"},
					{"name": "note", "type": "TEXT", "advancedOptions": every},
					{"name": "currency", "type": "SELECT", "optionItems": []map[string]any{{"value": "USD"}}},
					{"name": "amount", "type": "NUMBER", "decimals": 2, "isRequired": true, "advancedOptions": map[string]any{"min": 0, "max": 1000, "currency": "USD"}},
					{"name": "rate", "type": "NUMBER", "apiCalls": []map[string]any{{"apiCall": map[string]any{"url": rs.URL + "/rate", "resultPath": "data.rate",
						"description": "FX", "sort": []string{"1"}, "parameters": []string{"currency"}}}}},
					{"name": "total", "type": "FORMULA", "computedFormula": []string{"amount", "*", "2"}},
					{"name": "lines", "type": "TABLE", "parameters": []map[string]any{{"name": "item", "type": "TEXT", "isRequired": true, "advancedOptions": map[string]any{"tooltip": "i"},
						"sheetData": map[string]any{"cell": "C3"}},
						{"name": "grade", "type": "SELECT", "optionItems": []map[string]any{{"value": "a"}}},
						{"name": "double", "type": "FORMULA", "computedFormula": []string{"1", "+", "1"}, "decimals": 2}}},
				}},
			{"label": "Close", "policyNames": []string{"Admins"}, "stepIdsDependencies": []string{"Inspect"}, "stepIdsReprovalDependencies": []string{"Inspect"}},
		}}, 201).JSON()
		env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processLabel": "Vendor", "parameters": map[string]any{"taxId": "T1", "bank": "B"}}, 201)

		c := &conformance{seen: map[string]map[string]bool{}}
		for i, proc := range env.Call(get, "/v1/process", env.AdminKey, nil, 200).JSON()["data"].([]any) {
			path := fmt.Sprintf("process[%d]", i)
			if o := c.check("Process", path, proc); o != nil {
				c.each("Step", path, o, "steps", c.step)
			}
		}
		sim := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"], "parameters": map[string]any{
			"asset": rec["id"], "tagText": "P-1", "vendor": "T1", "currency": "USD", "amount": 10, "lines": []map[string]any{{"item": "bolt"}}}}, 201).JSON()
		if o := c.check("Simplified", "simplified", sim); o != nil {
			c.one("ReadMapping", "simplified", o, "readFromEntityMapping", nil)
			c.one("MeasurementDefinition", "simplified", o, "measurementDefinition", func(p string, d map[string]any) {
				c.each("ReservedToken", p, d, "reservedTokens", nil)
				c.each("AvailableTokens", p, d, "availableTokens", nil)
			})
			c.each("EntityData", "simplified", o, "entityDataItems", nil)
			c.each("EntityData", "simplified", o, "entityManipulations", nil)
			c.each("Unfilled", "simplified", o, "unfilledPolicies", nil)
			c.one("CurrentStep", "simplified", o, "currentStep", nil)
			c.one("ProcessEmbed", "simplified", o, "process", c.measurementSteps)
			for id, e := range o["entitiesById"].(map[string]any) {
				em, _ := e.(map[string]any)
				c.each("Parameter", "simplified.entitiesById."+id, em, "parameters", c.param)
			}
		}
		m := env.Call(get, "/v1/measurements/"+sim["id"].(string), env.AdminKey, nil, 200).JSON()
		c.one("ProcessEmbed", "measurement", m, "process", c.measurementSteps)
		c.one("CurrentStep", "measurement", m, "currentStep", nil)
		c.each("ReservedToken", "measurement", m, "reservedTokens", nil)

		rep := env.Call(post, "/v1/actions/"+sim["actionId"].(string)+"/reprove", env.AdminKey, map[string]any{"observation": "redo"}, 201).JSON()
		if o := c.check("ReproveAction", "reprove", rep); o != nil {
			c.one("ReproveStep", "reprove", o, "step", func(p string, st map[string]any) { c.one("ProcessRef", p, st, "process", nil) })
			c.one("Measurement", "reprove", o, "measurement", func(p string, mm map[string]any) { c.each("ReservedToken", p, mm, "reservedTokens", nil) })
			c.data("ReproveData", "reprove", o)
			c.one("CurrentStep", "reprove", o, "currentStep", nil)
		}

		for _, e := range c.errors {
			t.Error(e)
		}
		var names []string
		for name := range shapes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if c.seen[name] == nil {
				t.Errorf("%s: no instance seen", name)
				continue
			}
			var missing []string
			for field := range shapes[name] {
				if !c.seen[name][field] {
					missing = append(missing, field)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("%s: never present: %s", name, strings.Join(missing, ", "))
			}
		}
	})
}
