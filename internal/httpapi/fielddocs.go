package httpapi

import (
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/wps"
)

// describeFields gives each property of the document's schemas that has no
// doc tag its description from fieldDocs: by "Schema.field" first, then by
// the field's name alone (a name means the same thing in every shape that
// has it). A property left without one fails TestOpenAPIDocument.
func describeFields(r huma.Registry) {
	for name, s := range r.Map() {
		for p, ps := range s.Properties {
			if ps.Description != "" {
				continue
			}
			if d, ok := fieldDocs[name+"."+p]; ok {
				ps.Description = d
			} else if d, ok := fieldDocs[p]; ok {
				ps.Description = d
			}
		}
	}
}

// fieldDocs are the descriptions of fields without a doc tag, saying what
// each holds as the API guide (docs/api.md) explains it.
var fieldDocs = map[string]string{
	// Identity and time, everywhere.
	"id":          "Its id (a UUID)",
	"orgId":       "The organization it belongs to",
	"createdAt":   "When it was created (RFC 3339, UTC, milliseconds)",
	"updatedAt":   "When it last changed (RFC 3339, UTC, milliseconds)",
	"deletedAt":   "When it was deleted (soft); null while it is live",
	"name":        "Its name",
	"label":       "Its label, as people read it",
	"description": "Free text describing it",
	"status":      "Its status",
	"type":        "Its type",
	"version":     "Its version number, from 1",
	"sort":        "Its position among its siblings",
	"index":       "Its position, from 0",
	"value":       "The value, as text",
	"data":        "The items",
	"meta":        "The page's position in the whole list",
	"code":        "A short code, unique in the organization",
	"iconName":    "The icon the console shows beside the process: empty or one of " + strings.Join(wps.IconNames, ", "),
	"url":         "The URL",
	"email":       "The email address",
	"size":        "The size in bytes",
	"sha256":      "The SHA-256 of the bytes (hex)",
	"role":        "A role name",
	"roles":       "Role names (^[A-Z][A-Z0-9_]{0,63}$)",
	"token":       "The invite's secret token (wpsinv_...), shown only when the invite is created (not in an Idempotency-Key replay)",
	"user":        "The user",
	"password":    "The password (12 to 1024 characters)",

	// Ids of other resources.
	"stepId":                         "The step's id",
	"processId":                      "The process's id",
	"measurementId":                  "The measurement's id",
	"actionId":                       "The action's id",
	"parameterId":                    "The parameter's id",
	"entityId":                       "The entity's id",
	"entityParameterId":              "The id of the entity's parameter it refers to",
	"userId":                         "The user's id",
	"templateId":                     "The contract template's id",
	"templateVersion":                "The contract template's version it was rendered from",
	"documentId":                     "The document's id",
	"tokenId":                        "The seat's id",
	"tokenIds":                       "Seat ids, one per policy of the step",
	"reprovesActionId":               "For a REJECTION recorded by a reproval: the reproved action",
	"readParameterId":                "The parameter whose value is read",
	"writeParameterId":               "The parameter of this step the value is written into",
	"originParameterId":              "The parameter whose value looks the record up (default: this one)",
	"targetParameterIds":             "The parameters filled from the record's fields of the same names",
	"searchFieldId":                  "The source process's parameter searched for this parameter's value",
	"sheetApiId":                     "The workbook's id",
	"apiCallId":                      "The API call's id",
	"eventId":                        "The event's id",
	"deliveryId":                     "The delivery's id",
	"dataId":                         "The id of the data (one action's values of one parameter) it belongs to",
	"dataItemId":                     "The id of this value",
	"contractTemplateId":             "The contract template a CONTRACT parameter renders",
	"legalContractId":                "The contract template rendered when the step reaches consensus",
	"templateEntityId":               "The entity whose records the template reads",
	"templateEntityName":             "The name of the entity whose records the template reads",
	"openStepIds":                    "The ids of the open steps",
	"stepLabel":                      "The step by its label (instead of stepId); default: the first step",
	"readFromOtherMeasurementDataId": "The id of the readFromOtherMeasurementData link",

	// Organization.
	"logoKey":    "The attachment id of the logo the console shows",
	"operations": "The console sections shown to members who are not ADMIN (inbox, measurements, processes, entities; all when empty)",
	"pinnedUrl":  "An http(s) link shown in the console's navigation",
	"themeColor": "The console's colour, #RRGGBB",

	// Users, keys, policies, invites, sessions.
	"key":                        "The API key (wps_...): shown once, never again (not in an Idempotency-Key replay)",
	"prefix":                     "The key's first characters, to tell keys apart",
	"apiKey":                     "The new user's API key",
	"expiresAt":                  "When it expires",
	"functions":                  "The functions (permissions) the policy grants",
	"oldPolicyName":              "The policy's current name, checked when sent (409 if it is not)",
	"policyName":                 "The policy (seat) name",
	"policyNames":                "The policies whose holders fill the step's seats, one seat each",
	"viewPolicyNames":            "Only holders of one of these policies (and ADMIN) see the data",
	"orderedPolicies":            "When not empty, the order in which seats fill",
	"Invite.status":              "PENDING, ACCEPTED, REVOKED or EXPIRED",
	"User.status":                "ACTIVE or DEACTIVATED",
	"Health.status":              "ok (healthz) or ready (readyz)",
	"MeasurementSummary.status":  "The measurement's status, derived from its open steps",
	"MeasurementView.status":     "The measurement's status, derived from its open steps",
	"SimplifiedView.status":      "The measurement's status, derived from its open steps",
	"ActInBody.type":             "WRITE_DATA (fills a seat with data), APPROVAL (fills a seat) or REJECTION (sends the measurement back)",
	"ActionView.type":            "WRITE_DATA, APPROVAL or REJECTION",
	"MeasurementActionView.type": "WRITE_DATA, APPROVAL or REJECTION",
	"Parameter.type":             "The parameter's type",
	"StepParameter.type":         "The parameter's type",
	"DataItemView.type":          "The parameter's type",

	// Processes and steps.
	"steps":           "The steps, in order",
	"prompt":          "What the step asks of the people who act on it",
	"routing":         "Picks the next step by a parameter's value",
	"entityParamName": "The parameter (of this step or the linked record) whose value picks the rule",
	"rules":           "Each value and the step it opens (* is the default)",
	"p":               "A policy of the step",
	"r":               "The roles that count for that policy at this step",
	"webhookUrls":     "Comma-separated http(s) URLs told when the step reaches consensus",
	"stepCount":       "How many steps the version has",
	"format":          "The export format and its version",
	"process":         "The process",
	"step":            "The step",
	"Inputs.process":  "The process as it was when the document was rendered",
	"Inputs.step":     "The step that reached consensus",

	// Parameters.
	"parameters":                   "The parameters",
	"params":                       "The entity's parameters",
	"isRequired":                   "Needs a value before the step can reach consensus",
	"isUnique":                     "No two measurements of the process (or records of the entity) hold the same value",
	"isPermanent":                  "Cannot be removed once data uses it",
	"decimals":                     "Digits after the decimal point of a NUMBER (0 to 12)",
	"computedFormula":              "A FORMULA parameter's expression, as tokens (names, operators, numbers)",
	"entityOperation":              "For an ENTITY parameter: READ, or WRITE to write the step's data as a record",
	"autoFillEntityRelation":       "An ENTITY parameter of the step whose linked record fills this parameter",
	"contractTemplate":             "The contract template a CONTRACT parameter renders",
	"showColumns":                  "For an ENTITY or TABLE parameter: the columns shown",
	"viewColumns":                  "For an ENTITY or TABLE parameter: the columns shown in the read view",
	"advancedOptions":              "Presentation, limits and entity options",
	"optionItems":                  "The options of a SELECT or MULTI_SELECT parameter",
	"sheetData":                    "The workbook cell this parameter is linked to",
	"readFromEntity":               "Fills parameters from the entity record whose field equals this value",
	"readFromOtherMeasurementData": "Fills parameters from the latest measurement of another process that holds this value",
	"apiCalls":                     "HTTP endpoints called to fill this parameter",
	"selectedFields":               "Each field read and the parameter it fills",
	"param":                        "The parameter the value belongs to",

	// Advanced options and options.
	"tooltip":                "Help shown beside the field",
	"placeholder":            "Text shown in the empty field",
	"min":                    "The smallest value allowed",
	"max":                    "The largest value allowed",
	"minLength":              "The fewest characters allowed",
	"maxLength":              "The most characters allowed",
	"currency":               "ISO 4217 currency a NUMBER is shown in",
	"locale":                 "BCP 47 locale values are shown in",
	"dateFormat":             "How a DATE or DATETIME is shown",
	"isHidden":               "Hidden in the console's forms (the value is still shown)",
	"rightFreeze":            "Freeze the column at the right of the console's grid",
	"leftFreeze":             "Freeze the column at the left of the console's grid",
	"hasCustomColor":         "The options carry colours",
	"hasMetadata":            "The chosen options' meta is written into the entity's fields of the same names",
	"isMultiple":             "Several records may be linked",
	"hiddenFrom":             "Holders of these policies never receive the values",
	"insertOnEntity":         "The entity a record is written to when the step reaches consensus",
	"insertOnEntityMetadata": "Facts of the consensus written into the entity's fields of the same names",
	"color":                  "The option's colour, #RRGGBB",
	"persisted":              "The option is stored (not only sent)",
	"OptionItem.meta":        "Keys and values written with the option when hasMetadata is set",
	"cell":                   "The cell, as A1",
	"page":                   "The workbook's page (sheet)",
	"inputType":              "INPUT (the value goes into the cell) or OUTPUT (the cell's value fills the parameter)",
	"formula":                "The cell's formula, when it has one",

	// API calls.
	"apiCall":    "The call",
	"resultPath": "Where the value is in the answer (dot path)",

	// Measurements, actions and their views.
	"observation":               "A comment written with the action",
	"transactionHash":           "The client's reference of the action; its ledgerHash when it sent none",
	"ledgerHash":                "SHA-256 over the previous action's ledgerHash and this action's canonical JSON",
	"userAddress":               "The acting user's id",
	"username":                  "The acting user's name",
	"userRoles":                 "The roles the user held when acting",
	"counterpartsPoliciesRoles": "For each policy of the step: the roles that can fill its seat",
	"permission":                "The policy the seat belongs to",
	"reproved":                  "A reproval rejected this action",
	"superseded":                "A later rejection re-opened the step, so the action no longer counts",
	"reservedTokens":            "The filled seats",
	"availableTokens":           "Each policy's unfilled seats",
	"currentStep":               "The open step with the lowest position; null when none is open",
	"unfilledPolicies":          "The unfilled seats of every open step",
	"pendingPolicies":           "The unfilled seats of the current step",
	"nextUnfilledPolicy":        "The seat that fills next when the step orders its policies",
	"measurement":               "The measurement",
	"measurementDefinition":     "The measurement's seats",
	"isStepConsensed":           "The step reached consensus with this action",
	"entityDataItems":           "Records read or written, per entity",
	"entityManipulations":       "Records written by the action, per entity",
	"entitiesById":              "The entities named in entityDataItems, by id",
	"readFromEntityMapping":     "Which values were read from entities (readFromEntity)",
	"actions":                   "The actions",
	"ReadMapping.actions":       "The values read, by parameter",
	"ReadMapping.entity":        "The records they were read from, by parameter",
	"entity":                    "The entity the step works with; null when it has none",
	"hasGSheetKey":              "Some parameter is linked to a workbook cell",
	"hasGSheetInputParameter":   "Some parameter is an INPUT to a workbook cell",
	"dataItems":                 "The values",
	"displayValue":              "The value formatted per the parameter's options (locale, currency, dateFormat)",
	"openedAt":                  "When the step opened",
	"values":                    "The values, by parameter name",

	// Records and imports.
	"imported": "How many records were created",

	// Entities.
	"kind": "Its kind",

	// Documents and the ledger.
	"inputs":              "The values the document was rendered from",
	"renderer":            "The renderer's name and version",
	"signatures":          "The seats filled at the step, one signature each",
	"at":                  "When it happened",
	"policy":              "The policy the signer acted for",
	"body":                "The template's text, with {{placeholders}}",
	"treeSize":            "The number of leaves of the ledger's tree",
	"leafIndex":           "The leaf's position in the ledger's tree",
	"from":                "The smaller tree size",
	"to":                  "The larger tree size",
	"ok":                  "Every check passed",
	"reason":              "What failed",
	"pages":               "The workbook's pages (sheets)",
	"Sheet.kind":          "The workbook's format",
	"LedgerBreach.reason": "What the replay found wrong",

	// Webhooks.
	"events":         "The event types sent (all when empty)",
	"secret":         "The signing secret (whsec_...); not in an Idempotency-Key replay",
	"rotatedAt":      "When the secret was last rotated",
	"previousUntil":  "Until when the previous secret signs too",
	"eventType":      "The event's type",
	"attempts":       "How many attempts were made",
	"attemptLog":     "Each attempt",
	"attemptedAt":    "When the attempt was made",
	"durationMs":     "How long the attempt took, in milliseconds",
	"error":          "Why it failed",
	"lastError":      "Why the last attempt failed",
	"lastStatusCode": "The status the receiver answered last",
	"nextAttemptAt":  "When the next attempt is due",
	"deliveredAt":    "When the receiver accepted it",
	"giveUpAt":       "When retries stop",

	// Attachments.
	"filename": "The file's name as uploaded",

	// Paging.
	"total":       "How many items there are",
	"lastPage":    "The last page's number",
	"currentPage": "This page's number",
	"perPage":     "Items per page",
	"prev":        "The previous page's number; null on the first",
	"next":        "The next page's number; null on the last",

	"ActionView.data":            "What the action wrote, per parameter",
	"MeasurementActionView.data": "What the action wrote, per parameter",
	"Counterpart.name":           "The policy",
	"Counterpart.data":           "The roles that can fill its seat",
	"EntityData.data":            "The records",
	"RoutingRule.value":          "The value that picks this rule's step (* is the default)",
	"OptionItem.value":           "The option's value",
	"AcceptInBody.token":         "The invite's secret token (wpsinv_...)",

	// Problems.
	"Problem.status": "The HTTP status code",
	"title":          "The status's name",
	"detail":         "What went wrong, for people",
	"field":          "The field, as a dot path (a.b[0].c)",
	"message":        "What is wrong with it",
}

// pathNouns name what a path's {id} identifies, by the segment before it.
var pathNouns = map[string]string{
	"users": "user", "invites": "invite", "policies": "policy", "entities": "entity", "records": "record",
	"process": "process", "steps": "step", "contract-templates": "contract template",
	"measurements": "measurement", "actions": "action", "documents": "document", "webhooks": "webhook subscription", "chat-channels": "chat channel",
	"webhook-deliveries": "delivery", "attachments": "attachment", "sheets": "workbook", "api-keys": "API key",
}

// describeParams gives each parameter without a doc tag a description:
// a path id names what it identifies; others come from fieldDocs.
func describeParams(oapi *huma.OpenAPI) {
	for path, item := range oapi.Paths {
		segs := strings.Split(path, "/")
		for _, o := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if o == nil {
				continue
			}
			for _, p := range o.Parameters {
				if p.Description != "" {
					continue
				}
				if p.In == "path" {
					for i, s := range segs {
						if strings.HasPrefix(s, "{"+p.Name+"}") && i > 0 && pathNouns[segs[i-1]] != "" {
							p.Description = "The " + pathNouns[segs[i-1]] + "'s id"
						}
					}
				}
				if p.Description == "" {
					p.Description = fieldDocs[p.Name]
				}
			}
		}
	}
}
