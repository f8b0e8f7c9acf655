package scim

import (
	"net/http"
	"slices"
	"strings"

	"wps/internal/identity"
	"wps/internal/wps"
)

// A Group is a role: its id and displayName are the role's name, its
// members the users who hold it. wps keeps no list of roles apart from
// users and policies, so the Groups listed are the roles some user holds
// or some policy names, and every valid role name can be read and changed
// by id (a role nobody holds is a group without members).

// maxMembers bounds the members a group's answer lists.
const maxMembers = 10000

func (h *handler) groupResource(r *http.Request, p *wps.Principal, role string, members bool) (map[string]any, error) {
	out := map[string]any{
		"schemas": []string{groupSchema}, "id": role, "displayName": role,
		"meta": map[string]any{"resourceType": "Group", "location": location(r, "/Groups/"+role)},
	}
	if !members {
		return out, nil
	}
	users, _, err := identity.FindUsers(r.Context(), h.svc, p, wps.UserQuery{Role: role}, wps.Page{PerPage: maxMembers})
	if err != nil {
		return nil, err
	}
	list := make([]any, len(users))
	for i, u := range users {
		list[i] = map[string]any{"value": u.ID, "display": u.Email, "$ref": location(r, "/Users/"+u.ID)}
	}
	out["members"] = list
	return out, nil
}

// wantMembers reports whether a group's answer lists its members:
// excludedAttributes=members or attributes without members leave them out.
func wantMembers(r *http.Request) bool {
	q := r.URL.Query()
	has := func(list string) bool {
		return slices.ContainsFunc(strings.Split(list, ","), func(a string) bool {
			a = strings.TrimSpace(a)
			return strings.EqualFold(a, "members") || strings.EqualFold(a, groupSchema+":members")
		})
	}
	if v := q.Get("excludedAttributes"); v != "" && has(v) {
		return false
	}
	if v := q.Get("attributes"); v != "" && !has(v) {
		return false
	}
	return true
}

// groupID is the role named by the path, or 404.
func groupID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !wps.ValidRole(id) {
		return "", scimErr(http.StatusNotFound, "", "no such group: a group's id is a role name")
	}
	return id, nil
}

// memberIDs reads a list of members ({"value": userId}).
func memberIDs(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, invalidValue("members must be a list of {\"value\": userId}")
	}
	ids := make([]string, len(list))
	for i, item := range list {
		m, _ := item.(map[string]any)
		val, _ := get(m, "value")
		if ids[i], ok = val.(string); !ok || ids[i] == "" {
			return nil, invalidValue("members must be a list of {\"value\": userId}")
		}
	}
	return ids, nil
}

func (h *handler) writeGroup(w http.ResponseWriter, r *http.Request, p *wps.Principal, status int, role string) error {
	g, err := h.groupResource(r, p, role, true)
	if err != nil {
		return err
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", location(r, "/Groups/"+role))
	}
	write(w, status, g)
	return nil
}

func (h *handler) createGroup(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	body, err := decode(r)
	if err != nil {
		return err
	}
	if err := hasSchema(body, groupSchema); err != nil {
		return err
	}
	v, _ := get(body, "displayName")
	role, _ := v.(string)
	if !wps.ValidRole(role) {
		return invalidValue("displayName must be a role name: ^[A-Z][A-Z0-9_]{0,63}$ (an uppercase letter, then uppercase letters, digits and _)")
	}
	v, _ = get(body, "members")
	members, err := memberIDs(v)
	if err != nil {
		return err
	}
	roles, err := identity.RoleNames(r.Context(), h.svc, p)
	if err != nil {
		return err
	}
	if slices.Contains(roles, role) {
		return scimErr(http.StatusConflict, "uniqueness", "the group "+role+" exists (a user holds the role or a policy names it)")
	}
	if len(members) > 0 {
		if err := h.svc.ChangeRoleMembers(r.Context(), p, role, wps.RoleChange{Add: members}); err != nil {
			return err
		}
	}
	return h.writeGroup(w, r, p, http.StatusCreated, role)
}

func (h *handler) listGroups(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	terms, err := parseFilter(r.URL.Query().Get("filter"), groupSchema, "displayName", "id", "members", "members.value")
	if err != nil {
		return err
	}
	start, count, err := page(r)
	if err != nil {
		return err
	}
	roles, err := identity.RoleNames(r.Context(), h.svc, p)
	if err != nil {
		return err
	}
	for _, f := range terms {
		if f.attr == "displayName" || f.attr == "id" {
			roles = slices.DeleteFunc(roles, func(role string) bool { return role != f.value })
			continue
		}
		// Entra ID's "is this user a member": the user's roles.
		u, err := identity.FindUser(r.Context(), h.svc, p, f.value)
		if err != nil && !wps.IsCode(err, wps.CodeNotFound) {
			return err
		}
		roles = slices.DeleteFunc(roles, func(role string) bool { return !slices.Contains(u.Roles, role) })
	}
	total := len(roles)
	roles = roles[min(start-1, total):min(start-1+count, total)]
	out := make([]any, len(roles))
	for i, role := range roles {
		if out[i], err = h.groupResource(r, p, role, wantMembers(r)); err != nil {
			return err
		}
	}
	listResponse(w, total, start, out)
	return nil
}

func (h *handler) getGroup(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	role, err := groupID(r)
	if err != nil {
		return err
	}
	g, err := h.groupResource(r, p, role, wantMembers(r))
	if err != nil {
		return err
	}
	write(w, http.StatusOK, g)
	return nil
}

// sameName refuses a new displayName: a role is not renamed (its policies
// and steps name it).
func sameName(role string, v any) error {
	if name, ok := v.(string); !ok || name != role {
		return scimErr(http.StatusBadRequest, "mutability", "a group's displayName is its role's name, which cannot change")
	}
	return nil
}

// replaceGroup is PUT: the members become the body's (none when absent).
func (h *handler) replaceGroup(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	role, err := groupID(r)
	if err != nil {
		return err
	}
	body, err := decode(r)
	if err != nil {
		return err
	}
	if err := hasSchema(body, groupSchema); err != nil {
		return err
	}
	if v, ok := get(body, "displayName"); ok {
		if err := sameName(role, v); err != nil {
			return err
		}
	}
	v, _ := get(body, "members")
	members, err := memberIDs(v)
	if err != nil {
		return err
	}
	if err := h.svc.ChangeRoleMembers(r.Context(), p, role, wps.RoleChange{Add: members, Replace: true}); err != nil {
		return err
	}
	return h.writeGroup(w, r, p, http.StatusOK, role)
}

// patchGroup adds, removes or replaces members, in one transaction, as
// Entra ID ({"op":"Add","path":"members","value":[{"value":id}]}, Remove
// with the same value) and Okta ({"op":"remove","path":"members[value eq
// \"id\"]"}, {"op":"replace","value":{"id":…,"displayName":…}}) send them.
func (h *handler) patchGroup(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	role, err := groupID(r)
	if err != nil {
		return err
	}
	ops, err := patchOps(r)
	if err != nil {
		return err
	}
	var c memberChange
	for _, o := range ops {
		if err := c.apply(role, o); err != nil {
			return err
		}
	}
	if err := h.svc.ChangeRoleMembers(r.Context(), p, role, c.RoleChange); err != nil {
		return err
	}
	if !wantMembers(r) {
		g, _ := h.groupResource(r, p, role, false)
		write(w, http.StatusOK, g)
		return nil
	}
	return h.writeGroup(w, r, p, http.StatusOK, role)
}

// memberChange folds a PATCH's operations, in order, into one RoleChange.
type memberChange struct{ wps.RoleChange }

func (c *memberChange) add(ids []string) {
	c.Add = append(c.Add, ids...)
	c.Remove = slices.DeleteFunc(c.Remove, func(id string) bool { return slices.Contains(ids, id) })
}

func (c *memberChange) remove(ids []string) {
	c.Add = slices.DeleteFunc(c.Add, func(id string) bool { return slices.Contains(ids, id) })
	if !c.Replace {
		c.Remove = append(c.Remove, ids...)
	}
}

func (c *memberChange) replace(ids []string) {
	c.Add, c.Remove, c.Replace = slices.Clone(ids), nil, true
}

func (c *memberChange) apply(role string, o patchOp) error {
	path := o.path
	if len(path) > len(groupSchema)+1 && strings.EqualFold(path[:len(groupSchema)+1], groupSchema+":") {
		path = path[len(groupSchema)+1:]
	}
	lower := strings.ToLower(path)
	switch {
	case path == "":
		if o.op == "remove" {
			return scimErr(http.StatusBadRequest, "noTarget", "a remove operation needs a path")
		}
		m, ok := o.value.(map[string]any)
		if !ok {
			return invalidValue("an operation without a path needs an object value")
		}
		if v, ok := get(m, "displayName"); ok {
			if err := sameName(role, v); err != nil {
				return err
			}
		}
		if v, ok := get(m, "members"); ok {
			ids, err := memberIDs(v)
			if err != nil {
				return err
			}
			if o.op == "add" {
				c.add(ids)
			} else {
				c.replace(ids)
			}
		}
	case lower == "members":
		ids, err := memberIDs(o.value)
		if err != nil {
			return err
		}
		switch {
		case o.op == "add":
			c.add(ids)
		case o.op == "replace":
			c.replace(ids)
		case o.value == nil: // remove every member
			c.replace(nil)
		default:
			c.remove(ids)
		}
	case strings.HasPrefix(lower, "members[") && strings.HasSuffix(path, "]"):
		if o.op != "remove" {
			return scimErr(http.StatusBadRequest, "invalidPath", "a members[...] path is only for remove")
		}
		f, err := parseFilter(path[len("members["):len(path)-1], groupSchema, "value")
		if err != nil || len(f) != 1 {
			return scimErr(http.StatusBadRequest, "invalidPath", `a members path is members[value eq "userId"]`)
		}
		c.remove([]string{f[0].value})
	case lower == "displayname":
		if o.op == "remove" {
			return scimErr(http.StatusBadRequest, "mutability", "a group's displayName cannot be removed")
		}
		return sameName(role, o.value)
	}
	return nil // attributes wps does not keep (externalId) are ignored
}

// deleteGroup revokes the role from every user who holds it (409 for the
// org's last active ADMIN); policies that name it keep naming it.
func (h *handler) deleteGroup(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	role, err := groupID(r)
	if err != nil {
		return err
	}
	if err := h.svc.ChangeRoleMembers(r.Context(), p, role, wps.RoleChange{Replace: true}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
