package scim_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"wps/internal/httpapi"
	"wps/internal/identity"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

const (
	userURN  = "urn:ietf:params:scim:schemas:core:2.0:User"
	groupURN = "urn:ietf:params:scim:schemas:core:2.0:Group"
	patchURN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	errorURN = "urn:ietf:params:scim:api:messages:2.0:Error"
)

// do sends a SCIM request as identity providers do (application/scim+json);
// Env.Do checks the answer against SCIM's conventions (testutil's checkSCIM).
func do(env *tu.Env, method, path, key string, body any) *tu.Response {
	env.T.Helper()
	return env.Do(tu.Request{Method: method, Path: "/scim/v2" + path, Key: key, Body: body,
		Header: map[string]string{"Content-Type": "application/scim+json", "Accept": "application/scim+json"}})
}

// call is do that fails the test unless the status is want.
func call(env *tu.Env, method, path, key string, body any, want int) map[string]any {
	env.T.Helper()
	r := do(env, method, path, key, body)
	if r.Status != want {
		env.T.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r.JSON()
}

// scimError checks a SCIM error answer's status and scimType ("" for none).
func scimError(t *testing.T, r *tu.Response, status int, scimType string) {
	t.Helper()
	m := r.JSON()
	if r.Status != status || m["status"] != fmt.Sprint(status) || fmt.Sprint(m["schemas"]) != "["+errorURN+"]" {
		t.Fatalf("answer %d %s, want SCIM error %d", r.Status, r.Body, status)
	}
	if got, _ := m["scimType"].(string); got != scimType {
		t.Fatalf("scimType %q, want %q: %s", got, scimType, r.Body)
	}
}

func patchOp(ops ...map[string]any) map[string]any {
	return map[string]any{"schemas": []string{patchURN}, "Operations": ops}
}

// entraUser is the user Entra ID's provisioning service creates (its
// documented request, "Create User").
func entraUser(userName, externalID string) map[string]any {
	return map[string]any{
		"schemas":     []string{userURN, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"},
		"externalId":  externalID,
		"userName":    userName,
		"active":      true,
		"displayName": "Test User",
		"emails":      []any{map[string]any{"primary": true, "type": "work", "value": userName}},
		"meta":        map[string]any{"resourceType": "User"},
		"name":        map[string]any{"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
		"roles":       []any{},
	}
}

// oktaUser is the user Okta creates (its documented "Create the user").
func oktaUser(userName, externalID string) map[string]any {
	return map[string]any{
		"schemas":    []string{userURN},
		"userName":   userName,
		"name":       map[string]any{"givenName": "Isaac", "familyName": "Brock"},
		"emails":     []any{map[string]any{"primary": true, "value": userName, "type": "work"}},
		"locale":     "en-US",
		"externalId": externalID,
		"groups":     []any{},
		"password":   "1mz050nq",
		"active":     true,
	}
}

func resources(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range m["Resources"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// member makes a user by invitation, with a password, and returns its id
// and first API key.
func member(t *testing.T, env *tu.Env, email, password string, roles ...string) (string, string) {
	t.Helper()
	inv := env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": roles}, 201).JSON()
	acc := env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": inv["token"], "password": password}, 201).JSON()
	return acc["user"].(map[string]any)["id"].(string), acc["apiKey"].(map[string]any)["key"].(string)
}

// session signs in and returns the session's cookie header.
func session(t *testing.T, env *tu.Env, email, password string) map[string]string {
	t.Helper()
	r := env.Call("POST", "/v1/sessions", "", map[string]any{"email": email, "password": password}, 201)
	for _, c := range r.Header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(c, "wps_session="); ok {
			return map[string]string{"Cookie": "wps_session=" + strings.SplitN(v, ";", 2)[0]}
		}
	}
	t.Fatal("no session cookie")
	return nil
}

func TestUsers(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		key := env.AdminKey

		t.Run("Entra ID creates, finds by userName and externalId, and a second create is a uniqueness conflict", func(t *testing.T) {
			u := call(env, "POST", "/Users", key, entraUser("Test_User_ab6490ee@contoso.com", "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"), 201)
			if u["userName"] != "test_user_ab6490ee@contoso.com" || u["active"] != true || u["displayName"] != "Test User" ||
				u["externalId"] != "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef" || u["id"] == "" {
				t.Fatalf("created: %v", u)
			}
			meta := u["meta"].(map[string]any)
			if meta["resourceType"] != "User" || !strings.HasSuffix(meta["location"].(string), "/scim/v2/Users/"+u["id"].(string)) {
				t.Fatalf("meta: %v", meta)
			}
			scimError(t, do(env, "POST", "/Users", key, entraUser("test_user_AB6490EE@contoso.com", "other")), 409, "uniqueness")

			// Entra ID's "Get User by query": the filter's value in another case.
			found := call(env, "GET", `/Users?filter=userName+eq+%22Test_User_ab6490ee%40contoso.com%22`, key, nil, 200)
			if found["totalResults"] != 1.0 || resources(found)[0]["id"] != u["id"] || fmt.Sprint(found["schemas"]) != "[urn:ietf:params:scim:api:messages:2.0:ListResponse]" {
				t.Fatalf("by userName: %v", found)
			}
			found = call(env, "GET", `/Users?filter=externalId+eq+%220a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef%22`, key, nil, 200)
			if found["totalResults"] != 1.0 || resources(found)[0]["id"] != u["id"] {
				t.Fatalf("by externalId: %v", found)
			}
			found = call(env, "GET", `/Users?filter=id+eq+%22`+u["id"].(string)+`%22`, key, nil, 200)
			if found["totalResults"] != 1.0 {
				t.Fatalf("by id: %v", found)
			}
			// By the work email, as Entra ID does when matching on mail.
			found = call(env, "GET", "/Users?filter="+urlQuery(`emails[type eq "work"].value eq "test_user_ab6490ee@contoso.com"`), key, nil, 200)
			if found["totalResults"] != 1.0 || resources(found)[0]["id"] != u["id"] {
				t.Fatalf("by email: %v", found)
			}
			for f, want := range map[string]float64{
				`userName eq "test_user_ab6490ee@contoso.com" and externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"`: 1,
				`userName eq "test_user_ab6490ee@contoso.com" and externalId eq "other"`:                                0,
				`id eq "` + u["id"].(string) + `" and userName eq "test_user_ab6490ee@contoso.com"`:                     1,
				`id eq "` + u["id"].(string) + `" and externalId eq "other"`:                                            0,
				`userName eq "test_user_ab6490ee@contoso.com" and userName eq "other@contoso.com"`:                      0,
				`userName eq ""`: 0,
			} {
				if got := call(env, "GET", "/Users?filter="+urlQuery(f), key, nil, 200); got["totalResults"] != want {
					t.Fatalf("%s: %v, want %v", f, got, want)
				}
			}
			// "Get User by query - Zero results"
			none := call(env, "GET", `/Users?filter=userName+eq+%22non-existent%40contoso.com%22`, key, nil, 200)
			if none["totalResults"] != 0.0 || len(none["Resources"].([]any)) != 0 {
				t.Fatalf("zero results: %v", none)
			}
			// The user is a wps user: the API shows it.
			if v1 := env.Call("GET", "/v1/users/"+u["id"].(string), key, nil, 200).JSON(); v1["email"] != "test_user_ab6490ee@contoso.com" || v1["name"] != "Test User" {
				t.Fatalf("in the API: %v", v1)
			}
		})

		t.Run("Okta creates, replaces with PUT, and Entra ID patches names", func(t *testing.T) {
			u := call(env, "POST", "/Users", key, oktaUser("isaac.brock@example.com", "00ujl29u0le5T6Aj10h7"), 201)
			id := u["id"].(string)
			if u["displayName"] != "Isaac Brock" || u["name"].(map[string]any)["formatted"] != "Isaac Brock" {
				t.Fatalf("name from givenName and familyName: %v", u)
			}
			if got := call(env, "GET", "/Users/"+id, key, nil, 200); got["userName"] != "isaac.brock@example.com" {
				t.Fatalf("get: %v", got)
			}
			put := oktaUser("isaac.brock@example.com", "00ujl29u0le5T6Aj10h7")
			put["id"] = id
			put["name"] = map[string]any{"givenName": "Isaac", "familyName": "Brock-Smith"}
			if got := call(env, "PUT", "/Users/"+id, key, put, 200); got["displayName"] != "Isaac Brock-Smith" || got["active"] != true {
				t.Fatalf("put: %v", got)
			}
			got := call(env, "PATCH", "/Users/"+id, key, patchOp(
				map[string]any{"op": "Add", "path": "displayName", "value": "Ryan Leenay"},
				map[string]any{"op": "Replace", "path": "name.givenName", "value": "Ryan"},
				map[string]any{"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "Sales"},
				map[string]any{"op": "Replace", "path": "externalId", "value": "ext-2"},
			), 200)
			if got["displayName"] != "Ryan Leenay" || got["externalId"] != "ext-2" {
				t.Fatalf("patched: %v", got)
			}
			// Entra ID's "Update User [Multi-valued properties]": one part of the
			// name, and the work email (the userName is the email wps keeps).
			got = call(env, "PATCH", "/Users/"+id, key, patchOp(
				map[string]any{"op": "Replace", "path": `emails[type eq "work"].value`, "value": "updatedEmail@microsoft.com"},
				map[string]any{"op": "Replace", "path": "name.familyName", "value": "Leenay-Smith"},
			), 200)
			if got["displayName"] != "Ryan Leenay-Smith" || got["userName"] != "isaac.brock@example.com" {
				t.Fatalf("family name: %v", got)
			}
			// Entra ID changes a userName (a renamed UPN); another user's email is a conflict.
			got = call(env, "PATCH", "/Users/"+id, key, patchOp(map[string]any{"op": "Replace", "path": "userName", "value": "ryan@example.com"}), 200)
			if got["userName"] != "ryan@example.com" {
				t.Fatalf("userName: %v", got)
			}
			scimError(t, do(env, "PATCH", "/Users/"+id, key, patchOp(map[string]any{"op": "Replace", "path": "userName", "value": "test_user_ab6490ee@contoso.com"})), 409, "uniqueness")
			scimError(t, do(env, "GET", "/Users/01a208eb-0c3d-7423-80f5-f8b1dcc97b85", key, nil), 404, "")
		})

		t.Run("paging by startIndex and count", func(t *testing.T) {
			for i := range 4 {
				call(env, "POST", "/Users", key, oktaUser(fmt.Sprintf("page%d@example.com", i), ""), 201)
			}
			all := call(env, "GET", "/Users", key, nil, 200)
			total := int(all["totalResults"].(float64))
			if total != 7 || len(resources(all)) != 7 || all["startIndex"] != 1.0 || all["itemsPerPage"] != 7.0 {
				t.Fatalf("all: %v", all)
			}
			var ids []string
			for start := 1; start <= total; start += 2 {
				p := call(env, "GET", fmt.Sprintf("/Users?startIndex=%d&count=2", start), key, nil, 200)
				if p["startIndex"] != float64(start) || p["totalResults"] != 7.0 {
					t.Fatalf("page at %d: %v", start, p)
				}
				for _, r := range resources(p) {
					ids = append(ids, r["id"].(string))
				}
			}
			var want []string
			for _, r := range resources(all) {
				want = append(want, r["id"].(string))
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("pages %v, want %v", ids, want)
			}
			if p := call(env, "GET", "/Users?count=0", key, nil, 200); p["totalResults"] != 7.0 || len(p["Resources"].([]any)) != 0 {
				t.Fatalf("count=0: %v", p)
			}
			if p := call(env, "GET", "/Users?startIndex=0&count=1000", key, nil, 200); p["startIndex"] != 1.0 || len(resources(p)) != 7 {
				t.Fatalf("startIndex below 1, count above 100: %v", p)
			}
			if p := call(env, "GET", "/Users?startIndex=50", key, nil, 200); p["totalResults"] != 7.0 || len(p["Resources"].([]any)) != 0 {
				t.Fatalf("past the end: %v", p)
			}
		})
	})
}

// active: false is section 8's deactivation: the user's keys and sessions
// stop at once, whichever shape the provider sends, and DELETE does the same.
func TestDeactivation(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const pw = "correct horse battery"
		cases := []struct {
			name string
			send func(id string) *tu.Response
		}{
			{"Okta: replace with a value object", func(id string) *tu.Response {
				return do(env, "PATCH", "/Users/"+id, env.AdminKey, patchOp(map[string]any{"op": "replace", "value": map[string]any{"active": false}}))
			}},
			{"Entra ID: Replace active with the string False", func(id string) *tu.Response {
				return do(env, "PATCH", "/Users/"+id, env.AdminKey, patchOp(map[string]any{"op": "Replace", "path": "active", "value": "False"}))
			}},
			{"PUT with active false", func(id string) *tu.Response {
				u := oktaUser("", "")
				u["userName"], u["active"] = call(env, "GET", "/Users/"+id, env.AdminKey, nil, 200)["userName"], false
				return do(env, "PUT", "/Users/"+id, env.AdminKey, u)
			}},
			{"DELETE", func(id string) *tu.Response { return do(env, "DELETE", "/Users/"+id, env.AdminKey, nil) }},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				email := fmt.Sprintf("leaver%d@example.com", i)
				id, key := member(t, env, email, pw)
				cookie := session(t, env, email, pw)
				env.Call("GET", "/v1/users/me", key, nil, 200)
				if r := env.Do(tu.Request{Method: "GET", Path: "/v1/users/me", Header: cookie}); r.Status != 200 {
					t.Fatalf("session before: %d", r.Status)
				}
				r := c.send(id)
				if r.Status != 200 && r.Status != 204 {
					t.Fatalf("deactivate: %d %s", r.Status, r.Body)
				}
				// At once: the very next request with the key or the session.
				tu.Problem(t, env.Do(tu.Request{Method: "GET", Path: "/v1/users/me", Key: key}), 401, "")
				tu.Problem(t, env.Do(tu.Request{Method: "GET", Path: "/v1/users/me", Header: cookie}), 401, "")
				if got := call(env, "GET", "/Users/"+id, env.AdminKey, nil, 200); got["active"] != false {
					t.Fatalf("after: %v", got)
				}
				if v1 := env.Call("GET", "/v1/users/"+id, env.AdminKey, nil, 200).JSON(); v1["status"] != "DEACTIVATED" {
					t.Fatalf("in the API: %v", v1)
				}
			})
		}
		t.Run("active again brings no key back; the last active ADMIN stays", func(t *testing.T) {
			id, key := member(t, env, "back@example.com", pw)
			call(env, "PATCH", "/Users/"+id, env.AdminKey, patchOp(map[string]any{"op": "replace", "value": map[string]any{"active": false}}), 200)
			got := call(env, "PATCH", "/Users/"+id, env.AdminKey, patchOp(map[string]any{"op": "replace", "value": map[string]any{"active": true}}), 200)
			if got["active"] != true {
				t.Fatalf("reactivated: %v", got)
			}
			tu.Problem(t, env.Do(tu.Request{Method: "GET", Path: "/v1/users/me", Key: key}), 401, "")
			admin := env.Call("GET", "/v1/users/me", env.AdminKey, nil, 200).JSON()["id"].(string)
			scimError(t, do(env, "DELETE", "/Users/"+admin, env.AdminKey, nil), 409, "")
			scimError(t, do(env, "PATCH", "/Users/"+admin, env.AdminKey, patchOp(map[string]any{"op": "Replace", "path": "active", "value": false})), 409, "")
			env.Call("GET", "/v1/users/me", env.AdminKey, nil, 200)
		})
		t.Run("a user created inactive has no access", func(t *testing.T) {
			u := oktaUser("inactive@example.com", "")
			u["active"] = false
			if got := call(env, "POST", "/Users", env.AdminKey, u, 201); got["active"] != false {
				t.Fatalf("created: %v", got)
			}
		})
	})
}

// A group is a role: members assigned and revoked through the domain's
// role operations, which keep the org's last active ADMIN.
func TestGroups(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		key := env.AdminKey
		ana := call(env, "POST", "/Users", key, oktaUser("ana@example.com", ""), 201)["id"].(string)
		bo := call(env, "POST", "/Users", key, oktaUser("bo@example.com", ""), 201)["id"].(string)
		admin := env.Call("GET", "/v1/users/me", key, nil, 200).JSON()["id"].(string)
		roles := func(id string) []string {
			var out []string
			for _, r := range env.Call("GET", "/v1/users/"+id, key, nil, 200).JSON()["roles"].([]any) {
				out = append(out, r.(string))
			}
			return out
		}
		members := func(g map[string]any) []string {
			var out []string
			list, _ := g["members"].([]any)
			for _, m := range list {
				out = append(out, m.(map[string]any)["value"].(string))
			}
			slices.Sort(out)
			return out
		}
		sorted := func(ids ...string) []string { slices.Sort(ids); return ids }

		t.Run("create with members, find by displayName, list", func(t *testing.T) {
			g := call(env, "POST", "/Groups", key, map[string]any{"schemas": []string{groupURN}, "displayName": "AUDITORS",
				"members": []any{map[string]any{"value": ana}}}, 201)
			if g["id"] != "AUDITORS" || g["displayName"] != "AUDITORS" || !slices.Equal(members(g), []string{ana}) {
				t.Fatalf("created: %v", g)
			}
			if !slices.Equal(roles(ana), []string{"AUDITORS"}) {
				t.Fatalf("ana's roles: %v", roles(ana))
			}
			if u := call(env, "GET", "/Users/"+ana, key, nil, 200); fmt.Sprint(u["groups"]) != fmt.Sprint([]any{map[string]any{"value": "AUDITORS", "display": "AUDITORS", "$ref": strings.Replace(u["meta"].(map[string]any)["location"].(string), "/Users/"+ana, "/Groups/AUDITORS", 1)}}) {
				t.Fatalf("ana's groups: %v", u["groups"])
			}
			scimError(t, do(env, "POST", "/Groups", key, map[string]any{"schemas": []string{groupURN}, "displayName": "AUDITORS"}), 409, "uniqueness")
			scimError(t, do(env, "POST", "/Groups", key, map[string]any{"schemas": []string{groupURN}, "displayName": "Sales Team"}), 400, "invalidValue")
			// Entra ID looks a group up by displayName, without its members.
			found := call(env, "GET", `/Groups?excludedAttributes=members&filter=displayName+eq+%22AUDITORS%22`, key, nil, 200)
			if found["totalResults"] != 1.0 || resources(found)[0]["id"] != "AUDITORS" || resources(found)[0]["members"] != nil {
				t.Fatalf("by displayName: %v", found)
			}
			if none := call(env, "GET", `/Groups?filter=displayName+eq+%22NOBODY%22`, key, nil, 200); none["totalResults"] != 0.0 {
				t.Fatalf("none: %v", none)
			}
			// Entra ID asks whether a user is a member.
			for who, want := range map[string]float64{ana: 1, bo: 0, "01a208eb-0c3d-7423-80f5-f8b1dcc97b85": 0} {
				r := call(env, "GET", "/Groups?attributes=id&filter="+urlQuery(`id eq "AUDITORS" and members eq "`+who+`"`), key, nil, 200)
				if r["totalResults"] != want || want == 1 && resources(r)[0]["members"] != nil {
					t.Fatalf("member %s: %v, want %v", who, r, want)
				}
			}
			list := call(env, "GET", "/Groups", key, nil, 200)
			var names []string
			for _, r := range resources(list) {
				names = append(names, r["displayName"].(string))
			}
			if !slices.Equal(names, []string{"ADMIN", "AUDITORS"}) || !slices.Equal(members(resources(list)[0]), []string{admin}) {
				t.Fatalf("groups: %v", list)
			}
			if p := call(env, "GET", "/Groups?startIndex=2&count=1", key, nil, 200); p["totalResults"] != 2.0 || resources(p)[0]["id"] != "AUDITORS" {
				t.Fatalf("page: %v", p)
			}
		})

		t.Run("Entra ID adds and removes members", func(t *testing.T) {
			call(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "Add", "path": "members", "value": []any{map[string]any{"value": bo}}}), 200)
			if g := call(env, "GET", "/Groups/AUDITORS", key, nil, 200); !slices.Equal(members(g), sorted(ana, bo)) {
				t.Fatalf("after add: %v", g)
			}
			call(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"value": ana}}}), 200)
			if len(roles(ana)) != 0 || !slices.Equal(roles(bo), []string{"AUDITORS"}) {
				t.Fatalf("after remove: ana %v, bo %v", roles(ana), roles(bo))
			}
			// Entra ID's displayName replace to the same name is accepted; a new name is not.
			call(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "Replace", "path": "displayName", "value": "AUDITORS"}), 200)
			scimError(t, do(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "Replace", "path": "displayName", "value": "REVIEWERS"})), 400, "mutability")
		})

		t.Run("Okta adds, removes by a members filter, and replaces", func(t *testing.T) {
			call(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": ana, "display": "ana@example.com"}}}), 200)
			call(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "remove", "path": `members[value eq "` + bo + `"]`}), 200)
			if !slices.Equal(roles(ana), []string{"AUDITORS"}) || len(roles(bo)) != 0 {
				t.Fatalf("ana %v, bo %v", roles(ana), roles(bo))
			}
			g := call(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "replace", "value": map[string]any{"id": "AUDITORS", "displayName": "AUDITORS"}}), 200)
			if !slices.Equal(members(g), []string{ana}) {
				t.Fatalf("a rename to the same name keeps members: %v", g)
			}
			g = call(env, "PUT", "/Groups/AUDITORS", key, map[string]any{"schemas": []string{groupURN}, "displayName": "AUDITORS", "members": []any{map[string]any{"value": bo}}}, 200)
			if !slices.Equal(members(g), []string{bo}) || len(roles(ana)) != 0 {
				t.Fatalf("put: %v", g)
			}
		})

		t.Run("the last active ADMIN stays; a group of no user is refused whole", func(t *testing.T) {
			scimError(t, do(env, "DELETE", "/Groups/ADMIN", key, nil), 409, "")
			scimError(t, do(env, "PATCH", "/Groups/ADMIN", key, patchOp(map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"value": admin}}})), 409, "")
			// Another ADMIN in the same PATCH: then the first may go.
			call(env, "PATCH", "/Groups/ADMIN", key, patchOp(
				map[string]any{"op": "Add", "path": "members", "value": []any{map[string]any{"value": ana}}},
				map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"value": admin}}},
			), 200)
			anaKey, err := env.Service.IssueKey(context.Background(), env.OrgID, "ana@example.com")
			if err != nil {
				t.Fatal(err)
			}
			if g := call(env, "GET", "/Groups/ADMIN", anaKey.Key, nil, 200); !slices.Equal(members(g), []string{ana}) {
				t.Fatalf("ADMIN: %v", g)
			}
			scimError(t, do(env, "GET", "/Users", key, nil), 403, "")
			scimError(t, do(env, "PUT", "/Groups/ADMIN", anaKey.Key, map[string]any{"schemas": []string{groupURN}, "displayName": "ADMIN", "members": []any{}}), 409, "")
			call(env, "PUT", "/Groups/ADMIN", anaKey.Key, map[string]any{"schemas": []string{groupURN}, "displayName": "ADMIN", "members": []any{map[string]any{"value": admin}}}, 200)
			if !slices.Equal(roles(admin), []string{"ADMIN"}) || len(roles(ana)) != 0 {
				t.Fatalf("admin %v, ana %v", roles(admin), roles(ana))
			}
			scimError(t, do(env, "PATCH", "/Groups/AUDITORS", key, patchOp(map[string]any{"op": "Add", "path": "members",
				"value": []any{map[string]any{"value": ana}, map[string]any{"value": "01a208eb-0c3d-7423-80f5-f8b1dcc97b85"}}})), 400, "invalidValue")
			if len(roles(ana)) != 0 {
				t.Fatalf("ana was added though the PATCH failed: %v", roles(ana))
			}
		})

		t.Run("delete revokes the role from every member", func(t *testing.T) {
			r := do(env, "DELETE", "/Groups/AUDITORS", key, nil)
			if r.Status != 204 {
				t.Fatalf("delete: %d %s", r.Status, r.Body)
			}
			if len(roles(bo)) != 0 {
				t.Fatalf("bo: %v", roles(bo))
			}
			scimError(t, do(env, "GET", "/Groups/not-a-role", key, nil), 404, "")
		})

		t.Run("groups need roles:manage as well", func(t *testing.T) {
			env.Call("POST", "/v1/users/policies", key, map[string]any{"name": "Provisioning", "roles": []string{"SCIM"}, "functions": []string{"users:manage"}}, 201)
			_, scimKey := member(t, env, "scim@example.com", "correct horse battery", "SCIM")
			call(env, "GET", "/Users", scimKey, nil, 200)
			call(env, "GET", "/Groups", scimKey, nil, 200)
			scimError(t, do(env, "PATCH", "/Groups/ADMIN", scimKey, patchOp(map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": bo}}})), 403, "")
			if len(roles(bo)) != 0 {
				t.Fatalf("bo: %v", roles(bo))
			}
		})
	})
}

// Every malformed request answers SCIM's error; nothing else answers.
func TestErrors(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		key := env.AdminKey
		id := call(env, "POST", "/Users", key, oktaUser("ana@example.com", ""), 201)["id"].(string)
		_, plainKey := member(t, env, "plain@example.com", "correct horse battery")

		t.Run("authentication and authorization", func(t *testing.T) {
			r := do(env, "GET", "/Users", "", nil)
			scimError(t, r, 401, "")
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("challenge: %v", r.Header)
			}
			scimError(t, do(env, "GET", "/Users", "wps_not-a-key", nil), 401, "")
			scimError(t, do(env, "GET", "/Users", plainKey, nil), 403, "")
			scimError(t, do(env, "GET", "/ServiceProviderConfig", plainKey, nil), 403, "")
		})
		t.Run("bodies", func(t *testing.T) {
			for _, c := range []struct {
				name     string
				method   string
				path     string
				body     any
				scimType string
			}{
				{"not JSON", "POST", "/Users", `{"userName": `, "invalidSyntax"},
				{"not an object", "POST", "/Users", `["a"]`, "invalidSyntax"},
				{"two values", "POST", "/Users", `{"schemas":["` + userURN + `"],"userName":"x@example.com"} {}`, "invalidSyntax"},
				{"no schemas", "POST", "/Users", map[string]any{"userName": "x@example.com"}, "invalidSyntax"},
				{"no userName", "POST", "/Users", map[string]any{"schemas": []string{userURN}}, "invalidValue"},
				{"userName not an email", "POST", "/Users", map[string]any{"schemas": []string{userURN}, "userName": "not an email"}, "invalidValue"},
				{"userName a number", "POST", "/Users", map[string]any{"schemas": []string{userURN}, "userName": 7}, "invalidValue"},
				{"active not a boolean", "POST", "/Users", map[string]any{"schemas": []string{userURN}, "userName": "x@example.com", "active": "maybe"}, "invalidValue"},
				{"name not an object", "POST", "/Users", map[string]any{"schemas": []string{userURN}, "userName": "x@example.com", "name": "X"}, "invalidValue"},
				{"PUT without userName", "PUT", "/Users/" + id, map[string]any{"schemas": []string{userURN}}, "invalidValue"},
				{"PATCH without the PatchOp schema", "PATCH", "/Users/" + id, map[string]any{"Operations": []any{map[string]any{"op": "replace", "value": map[string]any{"active": false}}}}, "invalidSyntax"},
				{"PATCH without operations", "PATCH", "/Users/" + id, patchOp(), "invalidSyntax"},
				{"PATCH with an unknown op", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "frobnicate", "path": "active", "value": false}), "invalidSyntax"},
				{"PATCH replace without a value", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "replace", "path": "active"}), "invalidSyntax"},
				{"PATCH remove without a path", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "remove"}), "noTarget"},
				{"PATCH without a path, a value not an object", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "replace", "value": false}), "invalidValue"},
				{"PATCH active not a boolean", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "Replace", "path": "active", "value": "nope"}), "invalidValue"},
				{"PATCH a path not a string", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "replace", "path": 3, "value": "x"}), "invalidPath"},
				{"PATCH remove userName", "PATCH", "/Users/" + id, patchOp(map[string]any{"op": "remove", "path": "userName"}), "mutability"},
				{"a NUL character", "POST", "/Users", `{"schemas":["` + userURN + `"],"userName":"nul@example.com","displayName":"a\u0000b"}`, "invalidValue"},
				{"group without a displayName", "POST", "/Groups", map[string]any{"schemas": []string{groupURN}}, "invalidValue"},
				{"group members not a list", "POST", "/Groups", map[string]any{"schemas": []string{groupURN}, "displayName": "X", "members": "ana"}, "invalidValue"},
				{"group member without a value", "PATCH", "/Groups/X", patchOp(map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"display": "ana"}}}), "invalidValue"},
				{"group members filter with another operator", "PATCH", "/Groups/X", patchOp(map[string]any{"op": "remove", "path": `members[value co "a"]`}), "invalidPath"},
				{"group members filter to add", "PATCH", "/Groups/X", patchOp(map[string]any{"op": "add", "path": `members[value eq "a"]`, "value": []any{}}), "invalidPath"},
			} {
				t.Run(c.name, func(t *testing.T) {
					scimError(t, do(env, c.method, c.path, key, c.body), 400, c.scimType)
				})
			}
			if got := call(env, "GET", "/Users/"+id, key, nil, 200); got["active"] != true || got["userName"] != "ana@example.com" {
				t.Fatalf("a refused request changed the user: %v", got)
			}
		})
		t.Run("filters and paging", func(t *testing.T) {
			for _, f := range []string{
				`userName co "ana"`, `userName sw "a"`, `displayName eq "Ana"`, `userName eq ana@example.com`,
				`userName eq "ana@example.com" and active eq true`, `userName eq "unterminated`, `userName`,
				`emails[type eq "home"].value eq "ana@example.com"`, `userName eq "ana@example.com" or externalId eq "x"`,
			} {
				scimError(t, do(env, "GET", "/Users?filter="+urlQuery(f), key, nil), 400, "invalidFilter")
			}
			scimError(t, do(env, "GET", "/Groups?filter="+urlQuery(`externalId eq "x"`), key, nil), 400, "invalidFilter")
			scimError(t, do(env, "GET", "/Users?startIndex=one", key, nil), 400, "invalidValue")
			scimError(t, do(env, "GET", "/Users?filter=userName%20eq%20%22a%00b%40example.com%22", key, nil), 400, "invalidValue")
			scimError(t, do(env, "GET", "/Users?filter=userName%20eq%20%22a%FFb%40example.com%22", key, nil), 400, "invalidValue")
			scimError(t, do(env, "GET", "/Users?count=many", key, nil), 400, "invalidValue")
		})
		t.Run("unknown resources and methods", func(t *testing.T) {
			scimError(t, do(env, "GET", "/Nothing", key, nil), 404, "")
			scimError(t, do(env, "POST", "/Users/"+id, key, map[string]any{}), 404, "")
			scimError(t, do(env, "GET", "/Users/%00", key, nil), 404, "")
			scimError(t, do(env, "GET", "/ResourceTypes/Device", key, nil), 404, "")
			scimError(t, do(env, "GET", "/Schemas/urn:x", key, nil), 404, "")
		})
		t.Run("a body over the limit", func(t *testing.T) {
			big := `{"schemas":["` + userURN + `"],"userName":"big@example.com","displayName":"` + strings.Repeat("x", 2<<20) + `"}`
			scimError(t, do(env, "POST", "/Users", key, big), 413, "")
		})
	})
}

func urlQuery(s string) string {
	r := strings.NewReplacer("%", "%25", " ", "%20", `"`, "%22", "&", "%26", "+", "%2B", "[", "%5B", "]", "%5D")
	return r.Replace(s)
}

// A SCIM client works in its key's org only: another org's users and
// groups are not found and cannot be made members.
func TestOtherOrg(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		ana := call(env, "POST", "/Users", env.AdminKey, oktaUser("ana@example.com", "okta-ana"), 201)["id"].(string)
		other := env.NewOrg("Globex")

		scimError(t, do(env, "GET", "/Users/"+ana, other, nil), 404, "")
		scimError(t, do(env, "PATCH", "/Users/"+ana, other, patchOp(map[string]any{"op": "replace", "value": map[string]any{"active": false}})), 404, "")
		scimError(t, do(env, "PUT", "/Users/"+ana, other, oktaUser("ana@example.com", "")), 404, "")
		scimError(t, do(env, "DELETE", "/Users/"+ana, other, nil), 404, "")
		for _, f := range []string{`userName eq "ana@example.com"`, `externalId eq "okta-ana"`, `id eq "` + ana + `"`} {
			if r := call(env, "GET", "/Users?filter="+urlQuery(f), other, nil, 200); r["totalResults"] != 0.0 {
				t.Fatalf("%s in another org: %v", f, r)
			}
		}
		if r := call(env, "GET", "/Users", other, nil, 200); r["totalResults"] != 1.0 {
			t.Fatalf("the other org's users: %v", r)
		}
		scimError(t, do(env, "PATCH", "/Groups/ADMIN", other, patchOp(map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": ana}}})), 400, "invalidValue")
		// The same email is a user of each org.
		call(env, "POST", "/Users", other, oktaUser("ana@example.com", ""), 201)
		if got := call(env, "GET", "/Users/"+ana, env.AdminKey, nil, 200); got["active"] != true || got["externalId"] != "okta-ana" {
			t.Fatalf("ana changed: %v", got)
		}
		if roles := env.Call("GET", "/v1/users/"+ana, env.AdminKey, nil, 200).JSON()["roles"].([]any); len(roles) != 0 {
			t.Fatalf("ana's roles: %v", roles)
		}
	})
}

func TestDiscovery(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		spc := call(env, "GET", "/ServiceProviderConfig", env.AdminKey, nil, 200)
		if spc["patch"].(map[string]any)["supported"] != true || spc["bulk"].(map[string]any)["supported"] != false ||
			spc["filter"].(map[string]any)["maxResults"] != 100.0 {
			t.Fatalf("config: %v", spc)
		}
		rt := call(env, "GET", "/ResourceTypes", env.AdminKey, nil, 200)
		if rt["totalResults"] != 2.0 || resources(rt)[0]["endpoint"] != "/Users" || resources(rt)[1]["schema"] != groupURN {
			t.Fatalf("resource types: %v", rt)
		}
		call(env, "GET", "/ResourceTypes/Group", env.AdminKey, nil, 200)
		sc := call(env, "GET", "/Schemas", env.AdminKey, nil, 200)
		if sc["totalResults"] != 2.0 || resources(sc)[0]["id"] != userURN {
			t.Fatalf("schemas: %v", sc)
		}
		if u := call(env, "GET", "/Schemas/"+userURN, env.AdminKey, nil, 200); u["name"] != "User" || len(u["attributes"].([]any)) == 0 {
			t.Fatalf("user schema: %v", u)
		}
	})
}

// SCIM passes the API's middleware: the access log names the route, the
// org and the user; the rate limit answers SCIM's error with Retry-After;
// with the console on, /scim is still SCIM's.
func TestMiddleware(t *testing.T) {
	var buf tu.SyncBuffer
	env := tu.NewEnv(t, sqlstore.SQLite, tu.Options{Console: true,
		API: httpapi.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil)), RateLimit: 0.001, RateBurst: 2}})
	u := call(env, "POST", "/Users", env.AdminKey, oktaUser("ana@example.com", ""), 201)
	r := do(env, "GET", "/Users/"+u["id"].(string), env.AdminKey, nil)
	if r.Status != 200 || r.Header.Get("X-Request-Id") == "" || r.Header.Get("RateLimit") == "" && r.Header.Get("RateLimit-Remaining") == "" {
		t.Fatalf("answer: %d %v", r.Status, r.Header)
	}
	line := ""
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "path=/scim/v2/Users/") {
			line = l
		}
	}
	if !strings.Contains(line, `route="GET /scim/v2/Users/{id}"`) || !strings.Contains(line, "org="+env.OrgID) || !strings.Contains(line, "status=200") {
		t.Fatalf("access log line: %q", line)
	}
	r = do(env, "GET", "/Users", env.AdminKey, nil)
	scimError(t, r, 429, "")
	if r.Header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After: %v", r.Header)
	}
}

// Requests at once: one email makes one user, and two providers' requests
// each taking ADMIN from one of the org's two admins leave one of them.
func TestConcurrency(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const n = 8
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := do(env, "POST", "/Users", env.AdminKey, entraUser("same@example.com", fmt.Sprint(i)))
				statuses[i] = r.Status
			})
		}
		wg.Wait()
		slices.Sort(statuses)
		if statuses[0] != 201 || statuses[1] != 409 || statuses[n-1] != 409 {
			t.Fatalf("statuses: %v", statuses)
		}
		if r := call(env, "GET", "/Users?filter=userName+eq+%22same%40example.com%22", env.AdminKey, nil, 200); r["totalResults"] != 1.0 {
			t.Fatalf("users: %v", r)
		}

		first := env.Call("GET", "/v1/users/me", env.AdminKey, nil, 200).JSON()["id"].(string)
		second, secondKey := member(t, env, "second@example.com", "correct horse battery", "ADMIN")
		for round := range 5 {
			codes := make([]int, 2)
			for i, who := range []string{first, second} {
				wg.Go(func() {
					r := do(env, "PATCH", "/Groups/ADMIN", []string{env.AdminKey, secondKey}[i], patchOp(map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"value": who}}}))
					codes[i] = r.Status
				})
			}
			wg.Wait()
			slices.Sort(codes)
			// One removal commits first; the other then finds one ADMIN
			// left (409), or its caller no longer ADMIN (401 or 403).
			if codes[0] != 200 || codes[1] == 200 {
				t.Fatalf("round %d: %v", round, codes)
			}
			admins := admins(env)
			if len(admins) != 1 {
				t.Fatalf("round %d: ADMINs %v", round, admins)
			}
			// Both admins again for the next round.
			holder := admins[0]
			holderKey := map[string]string{first: env.AdminKey, second: secondKey}[holder]
			call(env, "PATCH", "/Groups/ADMIN", holderKey, patchOp(map[string]any{"op": "Add", "path": "members",
				"value": []any{map[string]any{"value": first}, map[string]any{"value": second}}}), 200)
		}
	})
}

// admins are the ids of the org's users holding ADMIN, read by the Service.
func admins(env *tu.Env) []string {
	env.T.Helper()
	users, _, err := identity.FindUsers(context.Background(), env.Service, &wps.Principal{OrgID: env.OrgID, Roles: []string{"ADMIN"}}, wps.UserQuery{Role: "ADMIN"}, wps.Page{PerPage: 10})
	if err != nil {
		env.T.Fatal(err)
	}
	var ids []string
	for _, u := range users {
		ids = append(ids, u.ID)
	}
	return ids
}

// Migration 33 (externalId) goes down and up again on both engines: the
// users stay, their externalId is gone after the way down.
func TestExternalIDMigration(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		call(env, "POST", "/Users", env.AdminKey, oktaUser("ana@example.com", "okta-ana"), 201)
		if err := sqlstore.MigrateTo(t.Context(), env.URL(), 30); err != nil {
			t.Fatal(err)
		}
		up := env.Reopen()
		if r := call(up, "GET", "/Users?filter=externalId+eq+%22okta-ana%22", up.AdminKey, nil, 200); r["totalResults"] != 0.0 {
			t.Fatalf("externalId kept: %v", r)
		}
		r := call(up, "GET", "/Users?filter=userName+eq+%22ana%40example.com%22", up.AdminKey, nil, 200)
		if r["totalResults"] != 1.0 || resources(r)[0]["externalId"] != nil {
			t.Fatalf("user: %v", r)
		}
	})
}
