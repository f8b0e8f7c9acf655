package scim

import (
	"net/http"
	"strings"

	"wps/internal/identity"
	"wps/internal/wps"
)

// userResource is a wps user as SCIM's User: userName and the one work
// email are the user's email, name.formatted and displayName the user's
// name, active their status, groups their roles.
func userResource(r *http.Request, u wps.User) map[string]any {
	out := map[string]any{
		"schemas":     []string{userSchema},
		"id":          u.ID,
		"userName":    u.Email,
		"name":        map[string]any{"formatted": u.Name},
		"displayName": u.Name,
		"active":      u.Status == wps.UserActive,
		"meta": map[string]any{
			"resourceType": "User", "created": u.CreatedAt, "lastModified": u.UpdatedAt,
			"location": location(r, "/Users/"+u.ID),
		},
	}
	if u.ExternalID != "" {
		out["externalId"] = u.ExternalID
	}
	if len(u.Roles) > 0 { // read only: Groups change them
		groups := make([]any, len(u.Roles))
		for i, role := range u.Roles {
			groups[i] = map[string]any{"value": role, "display": role, "$ref": location(r, "/Groups/"+role)}
		}
		out["groups"] = groups
	}
	if u.Email != "" { // the first admin of an org may have none
		out["emails"] = []any{map[string]any{"value": u.Email, "type": "work", "primary": true}}
	}
	return out
}

// userChange collects the attributes of a User that a request sets.
// Attributes wps does not keep (phone numbers, addresses, the enterprise
// extension, a second email) are ignored.
type userChange struct {
	userName, externalID              *string
	display, formatted, given, family *string
	active                            *bool
}

// set applies one attribute, named by path (a PATCH path, or a member of a
// body), to c. remove clears it.
func (c *userChange) set(path string, value any, remove bool) error {
	if len(path) > len(userSchema)+1 && strings.EqualFold(path[:len(userSchema)+1], userSchema+":") {
		path = path[len(userSchema)+1:]
	}
	str := func(dst **string) error {
		s, ok := value.(string)
		if remove {
			s, ok = "", true
		}
		if !ok {
			return invalidValue(path + " must be a string")
		}
		*dst = &s
		return nil
	}
	switch strings.ToLower(path) {
	case "username":
		if remove {
			return scimErr(http.StatusBadRequest, "mutability", "userName is required and cannot be removed")
		}
		return str(&c.userName)
	case "externalid":
		return str(&c.externalID)
	case "displayname":
		return str(&c.display)
	case "name.formatted":
		return str(&c.formatted)
	case "name.givenname":
		return str(&c.given)
	case "name.familyname":
		return str(&c.family)
	case "name":
		if remove {
			empty := ""
			c.formatted, c.given, c.family = &empty, &empty, &empty
			return nil
		}
		m, ok := value.(map[string]any)
		if !ok {
			return invalidValue("name must be an object")
		}
		for k, v := range m {
			if err := c.set("name."+k, v, false); err != nil {
				return err
			}
		}
	case "active":
		if remove {
			return nil
		}
		b, ok := boolean(value)
		if !ok {
			return invalidValue("active must be true or false")
		}
		c.active = &b
	}
	return nil
}

// boolean reads a SCIM boolean. Entra ID has sent "True" and "False" as
// strings, so those are read too.
func boolean(v any) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		switch strings.ToLower(v) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// setAll applies every member of a body or of a PATCH value object.
func (c *userChange) setAll(m map[string]any) error {
	for k, v := range m {
		if err := c.set(k, v, false); err != nil {
			return err
		}
	}
	return nil
}

// name is the user's name the change sets, if any: displayName, else
// name.formatted, else the given and family names.
func (c *userChange) name() *string {
	switch {
	case c.display != nil:
		return c.display
	case c.formatted != nil:
		return c.formatted
	case c.given != nil || c.family != nil:
		var parts []string
		for _, p := range []*string{c.given, c.family} {
			if p != nil && strings.TrimSpace(*p) != "" {
				parts = append(parts, strings.TrimSpace(*p))
			}
		}
		n := strings.Join(parts, " ")
		return &n
	}
	return nil
}

func status(active *bool) *string {
	if active == nil {
		return nil
	}
	s := wps.UserActive
	if !*active {
		s = wps.UserDeactivated
	}
	return &s
}

// readUser reads a whole User (POST, PUT): the SCIM schema, its
// attributes, and a userName (the email), which both need.
func readUser(r *http.Request) (userChange, error) {
	var c userChange
	body, err := decode(r)
	if err != nil {
		return c, err
	}
	if err := hasSchema(body, userSchema); err != nil {
		return c, err
	}
	if err := c.setAll(body); err != nil {
		return c, err
	}
	if c.userName == nil || *c.userName == "" {
		return c, invalidValue("userName is required (the user's email)")
	}
	return c, nil
}

func (h *handler) createUser(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	c, err := readUser(r)
	if err != nil {
		return err
	}
	in := identity.NewUser{Email: *c.userName, Deactivated: c.active != nil && !*c.active}
	if n := c.name(); n != nil {
		in.Name = *n
	}
	if c.externalID != nil {
		in.ExternalID = *c.externalID
	}
	u, err := identity.CreateUser(r.Context(), h.svc, p, in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", location(r, "/Users/"+u.ID))
	write(w, http.StatusCreated, userResource(r, u))
	return nil
}

func (h *handler) listUsers(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	terms, err := parseFilter(r.URL.Query().Get("filter"), userSchema, "userName", "emails.value", "externalId", "id")
	if err != nil {
		return err
	}
	start, count, err := page(r)
	if err != nil {
		return err
	}
	var q wps.UserQuery
	var id string
	none := false // terms no user matches: two different values of one attribute, or ""
	for _, f := range terms {
		dst := map[string]*string{"userName": &q.Email, "emails.value": &q.Email, "externalId": &q.ExternalID, "id": &id}[f.attr]
		if f.value == "" || (*dst != "" && !strings.EqualFold(*dst, f.value)) {
			none = true
		}
		*dst = f.value
	}
	if none {
		listResponse(w, 0, start, nil)
		return nil
	}
	if id != "" {
		return h.listOne(w, r, p, id, q, start, count)
	}
	users, total, err := identity.FindUsers(r.Context(), h.svc, p, q, wps.Page{PerPage: count, Skip: start - 1})
	if err != nil {
		return err
	}
	out := make([]any, len(users))
	for i, u := range users {
		out[i] = userResource(r, u)
	}
	listResponse(w, total, start, out)
	return nil
}

// listOne answers a filter with id eq "…": a list of that user when the
// other terms match too, or none.
func (h *handler) listOne(w http.ResponseWriter, r *http.Request, p *wps.Principal, id string, q wps.UserQuery, start, count int) error {
	u, err := identity.FindUser(r.Context(), h.svc, p, id)
	if wps.IsCode(err, wps.CodeNotFound) || err == nil &&
		(q.Email != "" && !strings.EqualFold(q.Email, u.Email) || q.ExternalID != "" && q.ExternalID != u.ExternalID) {
		listResponse(w, 0, start, nil)
		return nil
	}
	if err != nil {
		return err
	}
	var out []any
	if start == 1 && count > 0 {
		out = []any{userResource(r, u)}
	}
	listResponse(w, 1, start, out)
	return nil
}

func (h *handler) getUser(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	u, err := identity.FindUser(r.Context(), h.svc, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	write(w, http.StatusOK, userResource(r, u))
	return nil
}

// replaceUser is PUT: the attributes wps keeps become the body's (an
// absent externalId or name clears it; an absent active keeps the status).
func (h *handler) replaceUser(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	c, err := readUser(r)
	if err != nil {
		return err
	}
	empty := ""
	in := wps.UserUpdate{Email: c.userName, Name: c.name(), ExternalID: c.externalID, Status: status(c.active)}
	if in.Name == nil {
		in.Name = &empty
	}
	if in.ExternalID == nil {
		in.ExternalID = &empty
	}
	return h.update(w, r, p, in)
}

func (h *handler) update(w http.ResponseWriter, r *http.Request, p *wps.Principal, in wps.UserUpdate) error {
	u, err := h.svc.UpdateUser(r.Context(), p, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	write(w, http.StatusOK, userResource(r, u))
	return nil
}

// patchUser is PATCH (RFC 7644 section 3.5.2) of userName, externalId,
// name, displayName and active, in both shapes identity providers send:
// a path and its value (Entra ID: {"op":"Replace","path":"active",
// "value":"False"}) or no path and an object of attributes (Okta:
// {"op":"replace","value":{"active":false}}). Operation names are read
// without regard to case.
func (h *handler) patchUser(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	ops, err := patchOps(r)
	if err != nil {
		return err
	}
	var c userChange
	for _, o := range ops {
		switch {
		case o.path == "" && o.op == "remove":
			return scimErr(http.StatusBadRequest, "noTarget", "a remove operation needs a path")
		case o.path == "":
			m, ok := o.value.(map[string]any)
			if !ok {
				return invalidValue("an operation without a path needs an object value")
			}
			err = c.setAll(m)
		default:
			err = c.set(o.path, o.value, o.op == "remove")
		}
		if err != nil {
			return err
		}
	}
	if c.display == nil && c.formatted == nil && (c.given == nil) != (c.family == nil) {
		// One part of the name (Entra ID's "Replace name.familyName"):
		// the other is the current name's, split at its first space.
		u, err := identity.FindUser(r.Context(), h.svc, p, r.PathValue("id"))
		if err != nil {
			return err
		}
		given, family, _ := strings.Cut(strings.TrimSpace(u.Name), " ")
		if c.given == nil {
			c.given = &given
		} else {
			c.family = &family
		}
	}
	return h.update(w, r, p, wps.UserUpdate{Email: c.userName, Name: c.name(), ExternalID: c.externalID, Status: status(c.active)})
}

// deleteUser deactivates the user (section 8's deactivation: keys and
// sessions stop at once); wps keeps every user's history.
func (h *handler) deleteUser(w http.ResponseWriter, r *http.Request, p *wps.Principal) error {
	st := wps.UserDeactivated
	if _, err := h.svc.UpdateUser(r.Context(), p, r.PathValue("id"), wps.UserUpdate{Status: &st}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// patchOp is one operation of a PATCH body.
type patchOp struct {
	op    string // add, replace or remove
	path  string
	value any
}

// patchOps reads a PatchOp body: its schema, and one or more operations.
func patchOps(r *http.Request) ([]patchOp, error) {
	body, err := decode(r)
	if err != nil {
		return nil, err
	}
	if err := hasSchema(body, patchSchema); err != nil {
		return nil, err
	}
	v, _ := get(body, "Operations")
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, invalidSyntax("Operations must be a list of one or more operations")
	}
	ops := make([]patchOp, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, invalidSyntax("each operation must be an object")
		}
		op, _ := get(m, "op")
		name, _ := op.(string)
		ops[i].op = strings.ToLower(name)
		if ops[i].op != "add" && ops[i].op != "replace" && ops[i].op != "remove" {
			return nil, invalidSyntax("op must be add, replace or remove")
		}
		if path, ok := get(m, "path"); ok {
			if ops[i].path, ok = path.(string); !ok {
				return nil, scimErr(http.StatusBadRequest, "invalidPath", "path must be a string")
			}
		}
		val, hasValue := get(m, "value")
		if ops[i].op != "remove" && !hasValue {
			return nil, invalidSyntax(ops[i].op + " needs a value")
		}
		ops[i].value = val
	}
	return ops, nil
}
