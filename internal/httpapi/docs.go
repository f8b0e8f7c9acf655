package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"slices"
	"strings"
)

// The reference page: the OpenAPI document rendered as one plain HTML page
// on the server, with no script, style or request to another host, so that
// it keeps a CSP as strict as the console's (docs/decisions.md).

// docsCSP lets the page load nothing at all.
const docsCSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docs serves the reference page.
func (s *Server) docs(context.Context, *empty) (*rawOutput, error) {
	s.pageOnce.Do(func() { s.page = renderDocs(s.document()) })
	return &rawOutput{ContentType: "text/html; charset=utf-8", CSP: docsCSP, Body: s.page}, nil
}

type docsOp struct {
	Method, Path, ID, Summary, Description, Function string
	Public                                           bool
	Params                                           []docsParam
	Body                                             string
	Responses                                        []docsResponse
}

type docsParam struct{ Name, In, Type, Description string }

type docsResponse struct{ Status, Description, Media, Schema string }

type docsSchema struct {
	Name  string
	Props []docsParam
}

type docsTag struct {
	Name, Description string
	Ops               []docsOp
}

// renderDocs renders the document as the reference page.
func renderDocs(document []byte) []byte {
	var doc struct {
		Info  struct{ Title, Version, Description string }
		Tags  []struct{ Name, Description string }
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Summary     string
			Description string
			Tags        []string
			Security    []map[string][]string
			Function    string `json:"x-wps-function"`
			Parameters  []struct {
				Name, In, Description string
				Schema                map[string]any
			}
			RequestBody *struct {
				Content map[string]struct{ Schema map[string]any }
			} `json:"requestBody"`
			Responses map[string]struct {
				Description string
				Content     map[string]struct{ Schema map[string]any }
			}
		}
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]any
			}
		}
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		panic(err)
	}
	byTag := map[string]*docsTag{}
	var out []*docsTag
	for _, t := range doc.Tags {
		byTag[t.Name] = &docsTag{Name: t.Name, Description: t.Description}
		out = append(out, byTag[t.Name])
	}
	for path, item := range doc.Paths {
		for method, o := range item {
			d := docsOp{Method: strings.ToUpper(method), Path: path, ID: o.OperationID, Summary: o.Summary,
				Description: o.Description, Function: o.Function, Public: len(o.Security) == 0}
			for _, p := range o.Parameters {
				d.Params = append(d.Params, docsParam{Name: p.Name, In: p.In, Type: typeName(p.Schema), Description: p.Description})
			}
			if o.RequestBody != nil {
				var media []string
				for m, c := range o.RequestBody.Content {
					media = append(media, m+" "+typeName(c.Schema))
				}
				slices.Sort(media)
				d.Body = strings.Join(media, "; ")
			}
			for status, r := range o.Responses {
				if len(r.Content) == 0 {
					d.Responses = append(d.Responses, docsResponse{Status: status, Description: r.Description})
				}
				for m, c := range r.Content {
					d.Responses = append(d.Responses, docsResponse{Status: status, Description: r.Description, Media: m, Schema: typeName(c.Schema)})
				}
			}
			slices.SortFunc(d.Responses, func(a, b docsResponse) int { return strings.Compare(a.Status+a.Media, b.Status+b.Media) })
			if t := byTag[o.Tags[0]]; t != nil {
				t.Ops = append(t.Ops, d)
			}
		}
	}
	for _, t := range out {
		slices.SortFunc(t.Ops, func(a, b docsOp) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	}
	var schemas []docsSchema
	for name, sc := range doc.Components.Schemas {
		s := docsSchema{Name: name}
		for p, ps := range sc.Properties {
			desc, _ := ps["description"].(string)
			s.Props = append(s.Props, docsParam{Name: p, Type: typeName(ps), Description: desc})
		}
		slices.SortFunc(s.Props, func(a, b docsParam) int { return strings.Compare(a.Name, b.Name) })
		schemas = append(schemas, s)
	}
	slices.SortFunc(schemas, func(a, b docsSchema) int { return strings.Compare(a.Name, b.Name) })
	var b bytes.Buffer
	err := docsPage.Execute(&b, map[string]any{"Info": doc.Info, "Tags": out, "Schemas": schemas})
	if err != nil {
		panic(err)
	}
	return b.Bytes()
}

// typeName writes a schema briefly: a component's name (linked), or its
// type, "[]" before an array's items, "?" after what may be null.
func typeName(s map[string]any) string {
	if s == nil {
		return ""
	}
	if ref, ok := s["$ref"].(string); ok {
		return strings.TrimPrefix(ref, "#/components/schemas/")
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			m, _ := a.(map[string]any)
			if m["type"] == "null" {
				continue
			}
			parts = append(parts, typeName(m))
		}
		return strings.Join(parts, " | ") + "?"
	}
	t, null := s["type"], ""
	if ts, ok := t.([]any); ok && len(ts) == 2 && ts[1] == "null" {
		t, null = ts[0], "?"
	}
	switch t {
	case "array":
		items, _ := s["items"].(map[string]any)
		return "[]" + typeName(items) + null
	case nil:
		return "any"
	}
	name, _ := t.(string)
	if f, ok := s["format"].(string); ok {
		name += " (" + f + ")"
	}
	return name + null
}

var docsPage = template.Must(template.New("docs").Funcs(template.FuncMap{
	"schemaID": func(name string) string {
		name = strings.TrimLeft(name, "[]")
		if i := strings.IndexAny(name, " ?|"); i >= 0 {
			name = name[:i]
		}
		return "schema-" + name
	},
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Info.Title}}: API reference</title>
</head>
<body>
<header>
<h1>{{.Info.Title}}: API reference</h1>
<p>Version {{.Info.Version}}. {{.Info.Description}} The machine-readable document: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1).</p>
<nav aria-label="Contents"><ul>{{range .Tags}}<li><a href="#tag-{{.Name}}">{{.Name}}</a>: {{.Description}}</li>{{end}}<li><a href="#schemas">Schemas</a></li></ul></nav>
</header>
<main>
{{range .Tags}}<section id="tag-{{.Name}}">
<h2>{{.Name}}</h2>
<p>{{.Description}}</p>
{{range .Ops}}<details id="op-{{.ID}}">
<summary><code>{{.Method}} {{.Path}}</code> {{.Summary}}</summary>
<p>Operation <code>{{.ID}}</code>. {{if .Public}}No credential needed.{{else if .Function}}Needs an API key or session holding function <code>{{.Function}}</code>.{{else}}Needs an API key or session.{{end}}</p>
{{if .Params}}<table><caption>Parameters</caption><thead><tr><th scope="col">name</th><th scope="col">in</th><th scope="col">type</th><th scope="col">description</th></tr></thead><tbody>
{{range .Params}}<tr><td><code>{{.Name}}</code></td><td>{{.In}}</td><td>{{.Type}}</td><td>{{.Description}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Body}}<p>Request body: {{.Body}}</p>{{end}}
<table><caption>Responses</caption><thead><tr><th scope="col">status</th><th scope="col">description</th><th scope="col">media type</th><th scope="col">schema</th></tr></thead><tbody>
{{range .Responses}}<tr><td>{{.Status}}</td><td>{{.Description}}</td><td>{{.Media}}</td><td>{{if .Schema}}<a href="#{{schemaID .Schema}}">{{.Schema}}</a>{{end}}</td></tr>
{{end}}</tbody></table>
</details>
{{end}}</section>
{{end}}<section id="schemas">
<h2>Schemas</h2>
<p>A type ending in <code>?</code> may be <code>null</code>; <code>[]</code> is an array of what follows.</p>
{{range .Schemas}}<details id="schema-{{.Name}}">
<summary><code>{{.Name}}</code></summary>
{{if .Props}}<table><thead><tr><th scope="col">field</th><th scope="col">type</th><th scope="col">description</th></tr></thead><tbody>
{{range .Props}}<tr><td><code>{{.Name}}</code></td><td>{{.Type}}</td><td>{{.Description}}</td></tr>
{{end}}</tbody></table>{{end}}
</details>
{{end}}</section>
</main>
</body>
</html>
`))
