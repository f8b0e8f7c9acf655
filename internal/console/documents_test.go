package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// The measurement page lists its contracts, each a link to its PDF in the
// API, which the session cookie opens.
func TestConsoleDocuments(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		env := o.env
		env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Service agreement",
			"body": "# Service agreement {{measurement.name}}\n\nTemperature: {{param temperature}} °C"}, 201)
		env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Service", "code": "SRV", "steps": []map[string]any{
			{"label": "Agree", "policyNames": []string{"Inspector"}, "legalContractId": "Service agreement",
				"parameters": []map[string]any{{"name": "temperature", "type": "NUMBER"}}}}}, 201)
		m := env.Call(post, "/v1/measurements/simplified", o.inspector, map[string]any{"processLabel": "Service",
			"parameters": map[string]any{"temperature": 61.5}}, 201).JSON()

		c := newClient(t, env.Server.URL)
		c.signIn("ines@example.com")
		_, page := c.do(get, "/measurements/"+m["id"].(string), nil)
		link := regexp.MustCompile(`href="(/v1/documents/[^"]+/content)"`).FindStringSubmatch(page)
		if link == nil || !strings.Contains(page, "Service agreement (PDF)") {
			t.Fatalf("no document on the page:\n%s", page)
		}
		res, pdf := c.do(get, link[1], nil)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/pdf" || !strings.HasPrefix(pdf, "%PDF-") {
			t.Fatalf("download: %d %v", res.StatusCode, res.Header)
		}
		if text := tu.PDFText(t, []byte(pdf)); !strings.Contains(text, "Service agreement SRV-1") || !strings.Contains(text, "Temperature: 61.5 °C") {
			t.Fatalf("the document:\n%s", text)
		}
	})
}
