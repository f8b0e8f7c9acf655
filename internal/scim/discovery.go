package scim

import (
	"net/http"

	"wps/internal/wps"
)

// The discovery endpoints (RFC 7644 section 4) say what this server
// supports: PATCH and filters (eq on a few attributes), no bulk, sorting,
// ETags or password changes.

func (h *handler) serviceProviderConfig(w http.ResponseWriter, r *http.Request, _ *wps.Principal) error {
	no := map[string]any{"supported": false}
	write(w, http.StatusOK, map[string]any{
		"schemas":        []string{spcSchema},
		"patch":          map[string]any{"supported": true},
		"bulk":           map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":         map[string]any{"supported": true, "maxResults": maxCount},
		"changePassword": no,
		"sort":           no,
		"etag":           no,
		"authenticationSchemes": []any{map[string]any{
			"type": "oauthbearertoken", "name": "API key",
			"description": "Authorization: Bearer wps_... (an API key of a user holding users:manage; Groups also need roles:manage)",
			"primary":     true,
		}},
		"meta": map[string]any{"resourceType": "ServiceProviderConfig", "location": location(r, "/ServiceProviderConfig")},
	})
	return nil
}

func resourceTypeOf(r *http.Request, name string) map[string]any {
	schema, endpoint := userSchema, "/Users"
	if name == "Group" {
		schema, endpoint = groupSchema, "/Groups"
	}
	return map[string]any{
		"schemas": []string{rtSchema}, "id": name, "name": name, "endpoint": endpoint, "schema": schema,
		"meta": map[string]any{"resourceType": "ResourceType", "location": location(r, "/ResourceTypes/"+name)},
	}
}

func (h *handler) resourceTypes(w http.ResponseWriter, r *http.Request, _ *wps.Principal) error {
	listResponse(w, 2, 1, []any{resourceTypeOf(r, "User"), resourceTypeOf(r, "Group")})
	return nil
}

func (h *handler) resourceType(w http.ResponseWriter, r *http.Request, _ *wps.Principal) error {
	id := r.PathValue("id")
	if id != "User" && id != "Group" {
		return scimErr(http.StatusNotFound, "", "no such resource type: User and Group are served")
	}
	write(w, http.StatusOK, resourceTypeOf(r, id))
	return nil
}

// attr describes one attribute for /Schemas.
func attr(name, typ, desc string, required, multi bool, uniqueness string, sub ...map[string]any) map[string]any {
	a := map[string]any{
		"name": name, "type": typ, "description": desc, "required": required, "multiValued": multi,
		"caseExact": false, "mutability": "readWrite", "returned": "default", "uniqueness": uniqueness,
	}
	if len(sub) > 0 {
		a["subAttributes"] = sub
	}
	return a
}

func schemaOf(r *http.Request, id string) map[string]any {
	s := map[string]any{"schemas": []string{schemaSchema}, "id": id,
		"meta": map[string]any{"resourceType": "Schema", "location": location(r, "/Schemas/"+id)}}
	if id == userSchema {
		s["name"], s["description"] = "User", "A wps user: userName is the email"
		s["attributes"] = []any{
			attr("userName", "string", "The user's email, unique in the organization", true, false, "server"),
			attr("externalId", "string", "The identity provider's id of the user", false, false, "none"),
			attr("displayName", "string", "The user's name", false, false, "none"),
			attr("name", "complex", "The user's name (wps keeps one: formatted, or the given and family names joined)", false, false, "none",
				attr("formatted", "string", "The whole name", false, false, "none"),
				attr("givenName", "string", "Given name", false, false, "none"),
				attr("familyName", "string", "Family name", false, false, "none")),
			attr("active", "boolean", "false: deactivated, every API key and session stops at once", false, false, "none"),
			attr("emails", "complex", "The userName, as the one work email (read only)", false, true, "none",
				attr("value", "string", "The email", false, false, "none")),
			attr("groups", "complex", "The user's roles (read only: change them through Groups)", false, true, "none",
				attr("value", "string", "A role's name", false, false, "none")),
		}
	} else {
		s["name"], s["description"] = "Group", "A wps role: displayName is the role's name"
		s["attributes"] = []any{
			attr("displayName", "string", "The role's name: ^[A-Z][A-Z0-9_]{0,63}$", true, false, "server"),
			attr("members", "complex", "The users who hold the role", false, true, "none",
				attr("value", "string", "A user's id", false, false, "none")),
		}
	}
	return s
}

func (h *handler) schemas(w http.ResponseWriter, r *http.Request, _ *wps.Principal) error {
	listResponse(w, 2, 1, []any{schemaOf(r, userSchema), schemaOf(r, groupSchema)})
	return nil
}

func (h *handler) schema(w http.ResponseWriter, r *http.Request, _ *wps.Principal) error {
	id := r.PathValue("id")
	if id != userSchema && id != groupSchema {
		return scimErr(http.StatusNotFound, "", "no such schema")
	}
	write(w, http.StatusOK, schemaOf(r, id))
	return nil
}
