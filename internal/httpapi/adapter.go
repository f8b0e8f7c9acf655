package httpapi

import (
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
)

// adapter serves huma operations on the standard ServeMux, adding what the
// mux cannot express: custom methods after a wildcard, as in
// POST /v1/webhook-deliveries/{id}:retry. Such routes share the mux pattern
// of their base (POST /v1/webhook-deliveries/{id}) and are chosen by suffix.
type adapter struct {
	mux    *http.ServeMux
	suffix map[string][]suffixRoute // base pattern → routes
}

type suffixRoute struct {
	suffix  string
	param   string
	op      *huma.Operation
	handler func(huma.Context)
}

func newAdapter(mux *http.ServeMux) *adapter {
	return &adapter{mux: mux, suffix: map[string][]suffixRoute{}}
}

func (a *adapter) Handle(op *huma.Operation, handler func(huma.Context)) {
	path := op.Path
	last := path[strings.LastIndex(path, "/")+1:]
	if i := strings.Index(last, "}:"); strings.HasPrefix(last, "{") && i > 0 {
		base := strings.ToUpper(op.Method) + " " + strings.TrimSuffix(path, last[i+1:])
		r := suffixRoute{suffix: last[i+1:], param: last[1:i], op: op, handler: handler}
		if _, seen := a.suffix[base]; !seen {
			a.mux.HandleFunc(base, func(w http.ResponseWriter, req *http.Request) { a.dispatch(base, w, req) })
		}
		a.suffix[base] = append(a.suffix[base], r)
		return
	}
	a.mux.HandleFunc(strings.ToUpper(op.Method)+" "+path, func(w http.ResponseWriter, r *http.Request) {
		handler(humago.NewContext(op, r, w))
	})
}

func (a *adapter) dispatch(base string, w http.ResponseWriter, req *http.Request) {
	for _, r := range a.suffix[base] {
		if v := req.PathValue(r.param); strings.HasSuffix(v, r.suffix) && len(v) > len(r.suffix) {
			req.SetPathValue(r.param, strings.TrimSuffix(v, r.suffix))
			r.handler(humago.NewContext(r.op, req, w))
			return
		}
	}
	writeProblem(w, newProblem(http.StatusNotFound, "", "no such resource: "+req.URL.Path, nil))
}

func (a *adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }
