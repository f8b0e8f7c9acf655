package httpapi

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/wps"
)

// routes lists every route of the API, in one place.
func (s *Server) routes() {
	const get, post, put, patch, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete

	register(s, op(get, "/healthz", "healthz", "Liveness: the process answers", 200, public), s.healthz)
	register(s, withErrors(op(get, "/readyz", "readyz", "Readiness: the database answers", 200, public), 503), s.readyz)
	register(s, withContent(op(get, documentPath, "getOpenAPI", "This OpenAPI document", 200, public), "The OpenAPI 3.1 document", "application/openapi+json", &huma.Schema{Type: "object"}), s.openAPI)
	register(s, withContent(op(get, docsPath, "getDocs", "The reference page: this document as HTML", 200, public), "One HTML page, with no script", "text/html", &huma.Schema{Type: "string"}), s.docs)

	register(s, op(get, "/v1/organizations", "getOrganization", "The caller's organization", 200, member), s.getOrg)
	register(s, op(post, "/v1/organizations", "updateOrganization", "Update org", 200, needs(wps.FnOrgUpdate)), s.updateOrg)
	register(s, op(get, "/v1/organizations/calendar", "getCalendar", "The organization's business calendar (business deadlines count its working time)", 200, member), s.getCalendar)
	register(s, op(put, "/v1/organizations/calendar", "putCalendar", "Set the business calendar: steps that open from now on count over it", 200, needs(wps.FnOrgUpdate)), s.putCalendar)

	register(s, op(get, "/v1/users/me", "getMe", "The caller's user", 200, member), s.getMe)
	register(s, op(patch, "/v1/users/me", "updateMe", "Change the caller's name, language and time zone", 200, member), s.updateMe)
	register(s, withSecrets(op(post, "/v1/users/me/api-keys", "createApiKey", "Create an API key for the caller", 201, member), "key"), s.createAPIKey)
	register(s, op(get, "/v1/users/me/api-keys", "listApiKeys", "List the caller's API keys", 200, member), s.listAPIKeys)
	register(s, op(del, "/v1/users/me/api-keys/{id}", "deleteApiKey", "Revoke one of the caller's API keys", 204, member), s.deleteAPIKey)
	register(s, op(get, "/v1/users/me/notifications", "getNotificationPrefs", "The caller's choice of mail about work", 200, member), s.getNotificationPrefs)
	register(s, op(put, "/v1/users/me/notifications", "putNotificationPrefs", "Choose mail about work: immediate, a daily digest, or off", 200, member), s.putNotificationPrefs)
	register(s, op(post, "/v1/users/me/delegations", "createDelegation", "Delegate the caller's seats to another user while away", 201, member), s.createDelegation)
	register(s, op(get, "/v1/users/me/delegations", "listDelegations", "The caller's delegations, given and received, current and upcoming", 200, member), s.listDelegations)
	register(s, op(del, "/v1/delegations/{id}", "deleteDelegation", "Revoke a delegation at once (its delegator, its delegate, or users:manage)", 204, member), s.deleteDelegation)
	register(s, op(put, "/v1/users/me/password", "changePassword", "Set the caller's password (ends their other sessions)", 204, member), s.changePassword)
	register(s, op(get, "/v1/users", "listUsers", "List the organization's users", 200, needs(wps.FnUsersRead)), s.listUsers)
	register(s, op(get, "/v1/users/{id}", "getUser", "Get a user", 200, needs(wps.FnUsersRead)), s.getUser)
	register(s, op(patch, "/v1/users/{id}", "updateUser", "Rename a user, or deactivate (every key and session stops) or reactivate them", 200, needs(wps.FnUsersManage)), s.updateUser)
	register(s, op(post, "/v1/users/{id}/delegations", "createUserDelegation", "Delegate the seats of a user who is away", 201, needs(wps.FnUsersManage)), s.createUserDelegation)
	register(s, op(get, "/v1/users/{id}/api-keys", "listUserApiKeys", "List a user's API keys (prefixes only)", 200, needs(wps.FnUsersManage)), s.listUserAPIKeys)
	register(s, op(del, "/v1/users/{id}/api-keys/{keyId}", "deleteUserApiKey", "Revoke a user's API key", 204, needs(wps.FnUsersManage)), s.deleteUserAPIKey)

	register(s, withErrors(op(post, "/v1/sessions", "signIn", "Sign in with email and password: a session cookie and its CSRF token (403 when the organization's passwordSignIn refuses it)", 201, public), 403), s.signIn)
	register(s, op(del, "/v1/sessions/current", "signOut", "Sign out: end the caller's session", 204, member), s.signOut)

	register(s, withErrors(op(get, "/v1/sso", "getSso", "The organization's single sign-on settings (404 when off)", 200, needs(wps.FnOrgUpdate)), 404), s.getSSO)
	register(s, op(put, "/v1/sso", "putSso", "Set the organization's single sign-on (the issuer's discovery document is fetched first)", 200, needs(wps.FnOrgUpdate)), s.putSSO)
	register(s, withErrors(op(del, "/v1/sso", "deleteSso", "Turn single sign-on off", 204, needs(wps.FnOrgUpdate)), 404), s.deleteSSO)

	register(s, withSecrets(op(post, "/v1/invites", "createInvite", "Invite a user", 201, needs(wps.FnUsersInvite)), "token"), s.createInvite)
	register(s, op(get, "/v1/invites", "listInvites", "List invites", 200, needs(wps.FnUsersInvite)), s.listInvites)
	register(s, op(del, "/v1/invites/{id}", "deleteInvite", "Revoke an invite", 204, needs(wps.FnUsersInvite)), s.deleteInvite)
	register(s, withErrors(withSecrets(op(post, "/v1/invites/accept", "acceptInvite", "Accept an invite: the token is the credential", 201, public), "apiKey.key"), 404, 410), s.acceptInvite)

	register(s, withErrors(op(get, "/v1/notifications", "listNotifications", "List the messages mailed (the caller's own; with users:manage everyone's)", 200, member), 403), s.listNotifications)
	register(s, op(post, "/v1/password-resets", "requestPasswordReset", "Ask for a password reset link by mail: 202 whatever the email", 202, public), s.requestPasswordReset)
	register(s, withErrors(op(post, "/v1/password-resets/accept", "acceptPasswordReset", "Set a new password with a reset link's token (ends every session of the user)", 204, public), 404, 410), s.acceptPasswordReset)

	register(s, withErrors(op(post, "/v1/roles/assign", "assignRole", "Assign a role to a user", 200, needs(wps.FnRolesManage)), 404), s.assignRole)
	register(s, withErrors(op(post, "/v1/roles/revoke", "revokeRole", "Revoke a role from a user", 200, needs(wps.FnRolesManage)), 404), s.revokeRole)

	register(s, op(post, "/v1/users/policies", "createPolicy", "Create a policy", 201, needs(wps.FnPoliciesManage)), s.createPolicy)
	register(s, op(get, "/v1/users/policies", "listPolicies", "List policies", 200, needs(wps.FnUsersRead)), s.listPolicies)
	register(s, op(patch, "/v1/users/policies/{id}", "updatePolicy", "Update a policy (a new name renames every reference)", 200, needs(wps.FnPoliciesManage)), s.updatePolicy)
	register(s, op(del, "/v1/users/policies/{id}", "deletePolicy", "Delete a policy", 204, needs(wps.FnPoliciesManage)), s.deletePolicy)

	register(s, op(post, "/v1/entities", "createEntity", "Create an entity", 201, needs(wps.FnEntityWrite)), s.createEntity)
	register(s, op(post, "/v1/entities/simplified", "createSimplifiedEntity", "Create an entity in compact form", 201, needs(wps.FnEntityWrite)), s.createSimplifiedEntity)
	register(s, op(get, "/v1/entities", "listEntities", "List entities (the deleted ones with deleted=true)", 200, needs(wps.FnEntityRead)), s.listEntities)
	register(s, op(get, "/v1/entities/{id}", "getEntity", "Get an entity", 200, needs(wps.FnEntityRead)), s.getEntity)
	register(s, op(patch, "/v1/entities/{id}", "updateEntity", "Update an entity", 200, needs(wps.FnEntityWrite)), s.updateEntity)
	register(s, op(del, "/v1/entities/{id}", "deleteEntity", "Delete an entity (soft: :restore brings it back)", 204, needs(wps.FnEntityWrite)), s.deleteEntity)
	register(s, op(post, "/v1/entities/{id}:restore", "restoreEntity", "Bring a deleted entity back with its records (409 when a live entity has its name)", 200, needs(wps.FnEntityWrite)), s.restoreEntity)

	register(s, op(post, "/v1/entities/{id}/records", "createRecord", "Create a record", 201, needs(wps.FnEntityWrite)), s.createRecord)
	register(s, withFilter(op(get, "/v1/entities/{id}/records", "listRecords", "List records; filter with filter[NAME]=VALUE", 200, needs(wps.FnEntityRead))), s.listRecords)
	register(s, op(get, "/v1/entities/{id}/records/{recordId}", "getRecord", "Get a record", 200, needs(wps.FnEntityRead)), s.getRecord)
	register(s, op(patch, "/v1/entities/{id}/records/{recordId}", "patchRecord", "Update a record (merge; null clears)", 200, needs(wps.FnEntityWrite)), s.patchRecord)
	register(s, op(del, "/v1/entities/{id}/records/{recordId}", "deleteRecord", "Delete a record", 204, needs(wps.FnEntityWrite)), s.deleteRecord)
	register(s, s.withImportJob(withBodyLimit(op(post, "/v1/entities/{id}/records:import", "importRecords", "Import records from CSV, a JSON array or a workbook, all or nothing: at once (200), or as a job (202) when large or with Prefer: respond-async", 200, needs(wps.FnEntityWrite)), importLimit)), s.importRecords)
	register(s, op(get, "/v1/import-jobs/{id}", "getImportJob", "Get a records import job: its status, progress and errors", 200, needs(wps.FnEntityWrite)), s.getImportJob)
	register(s, op(post, "/v1/process", "createProcess", "Create a process with its steps", 201, needs(wps.FnProcessWrite)), s.createProcess)
	register(s, op(get, "/v1/process", "listProcesses", "List processes (latest versions; the deleted ones with deleted=true)", 200, needs(wps.FnProcessRead)), s.listProcesses)
	register(s, op(post, "/v1/process/import", "importProcess", "Create a process from an exported definition", 201, needs(wps.FnProcessWrite)), s.importProcess)
	register(s, op(get, "/v1/process/{id}", "getProcess", "Get a process (latest version, or ?version=N)", 200, needs(wps.FnProcessRead)), s.getProcess)
	register(s, op(patch, "/v1/process/{id}", "updateProcess", "Update a process (a new version once measurements use it)", 200, needs(wps.FnProcessWrite)), s.updateProcess)
	register(s, op(del, "/v1/process/{id}", "deleteProcess", "Delete a process (soft: :restore brings it back; its measurements stay)", 204, needs(wps.FnProcessWrite)), s.deleteProcess)
	register(s, op(post, "/v1/process/{id}:restore", "restoreProcess", "Bring a deleted process back (409 when a live process has its code or label)", 200, needs(wps.FnProcessWrite)), s.restoreProcess)
	register(s, op(get, "/v1/process/{id}/versions", "listProcessVersions", "List a process's versions", 200, needs(wps.FnProcessRead)), s.listProcessVersions)
	register(s, op(post, "/v1/process/{id}/migrations", "migrateMeasurements", "Move the live measurements of a version to the latest (dryRun: say what would happen)", 200, needs(wps.FnProcessWrite)), s.migrateMeasurements)
	register(s, op(get, "/v1/process/{id}/export", "exportProcess", "Export a process definition (portable JSON)", 200, needs(wps.FnProcessRead)), s.exportProcess)
	register(s, op(post, "/v1/process/{id}/steps", "addStep", "Add a step", 201, needs(wps.FnProcessWrite)), s.addStep)
	register(s, op(patch, "/v1/process/{id}/steps/{stepId}", "updateStep", "Update a step (the fields sent)", 200, needs(wps.FnProcessWrite)), s.updateStep)
	register(s, op(del, "/v1/process/{id}/steps/{stepId}", "deleteStep", "Delete a step", 204, needs(wps.FnProcessWrite)), s.deleteStep)

	register(s, op(post, "/v1/contract-templates", "createContractTemplate", "Create a contract template", 201, needs(wps.FnProcessWrite)), s.createTemplate)
	register(s, op(get, "/v1/contract-templates", "listContractTemplates", "List contract templates (current versions)", 200, needs(wps.FnProcessRead)), s.listTemplates)
	register(s, op(get, "/v1/contract-templates/{id}", "getContractTemplate", "Get a contract template (current version, or ?version=N)", 200, needs(wps.FnProcessRead)), s.getTemplate)
	register(s, op(get, "/v1/contract-templates/{id}/versions", "listContractTemplateVersions", "List a contract template's versions", 200, needs(wps.FnProcessRead)), s.listTemplateVersions)
	register(s, op(patch, "/v1/contract-templates/{id}", "updateContractTemplate", "Update a contract template (a new version once a document used it)", 200, needs(wps.FnProcessWrite)), s.updateTemplate)
	register(s, op(del, "/v1/contract-templates/{id}", "deleteContractTemplate", "Delete a contract template that no live process names (soft)", 204, needs(wps.FnProcessWrite)), s.deleteTemplate)

	register(s, withErrors(op(post, "/v1/measurements", "createMeasurement", "Start a measurement without data", 201, needs(wps.FnMeasurementCreate)), 404), s.createMeasurement)
	register(s, withErrors(op(post, "/v1/measurements/simplified", "createSimplifiedMeasurement", "Create simplified measurement", 201, needs(wps.FnMeasurementCreate)), 404, 502), s.createSimplifiedMeasurement)
	register(s, op(get, "/v1/measurements", "listMeasurements", "List measurements", 200, needs(wps.FnMeasurementRead)), s.listMeasurements)
	register(s, withErrors(withCSV(op(get, "/v1/measurements:export", "exportMeasurements", "Export a process's measurements as CSV or XLSX (streamed): one column per parameter, the values the caller may see", 200, needs(wps.FnMeasurementRead))), 404), s.exportMeasurements)
	register(s, op(get, "/v1/reports/processes/{id}", "getProcessReport", "Where a process's work waits over a range of days: counts, cycle time, first-pass yield, step waits, seat fill times, throughput (needs measurement:read too)", 200, needs(wps.FnProcessRead)), s.getProcessReport)
	register(s, op(get, "/v1/measurements/{id}", "getMeasurement", "Get a measurement with its process, steps and actions", 200, needs(wps.FnMeasurementRead)), s.getMeasurement)
	register(s, withErrors(op(post, "/v1/measurements/{id}/actions", "createAction", "Act on a measurement (WRITE_DATA needs action:write; APPROVAL and REJECTION need action:approve)", 201, member), 502), s.act)
	register(s, op(get, "/v1/actions/{id}", "getAction", "Get an action", 200, needs(wps.FnMeasurementRead)), s.getAction)
	register(s, op(post, "/v1/actions/{id}/reprove", "reproveAction", "Reprove an action", 201, needs(wps.FnActionReprove)), s.reprove)
	register(s, withErrors(op(get, "/v1/actions/{id}/proof", "getActionProof", "Prove that an action is in the organization's ledger (inclusion proof and signed checkpoint)", 200, needs(wps.FnLedgerRead)), 409), s.actionProof)
	register(s, withErrors(withZip(op(get, "/v1/measurements/{id}/evidence", "getMeasurementEvidence", "The measurement's evidence bundle (application/zip; also needs measurement:read): its actions and ledger entries with their inclusion proofs, its documents and workbooks, its process's audit events, the signed checkpoint and the key", 200, needs(wps.FnLedgerRead))), 409), s.measurementEvidence)
	register(s, op(get, "/v1/audit-events", "listAuditEvents", "List audit events: every change that is not an action, newest first", 200, needs(wps.FnAuditRead)), s.listAuditEvents)
	register(s, op(get, "/v1/ledger/verify", "verifyLedger", "Verify the organization's ledger: its tree against the latest checkpoint, each measurement replayed", 200, needs(wps.FnLedgerRead)), s.verifyLedger)
	register(s, op(get, "/v1/ledger/key", "getLedgerKey", "The verifier key of the ledger's checkpoints", 200, needs(wps.FnLedgerRead)), s.ledgerKey)
	register(s, op(get, "/v1/ledger/checkpoint", "getLedgerCheckpoint", "The latest signed checkpoint of the organization's ledger", 200, needs(wps.FnLedgerRead)), s.ledgerCheckpoint)
	register(s, op(get, "/v1/ledger/consistency", "getLedgerConsistency", "Prove that the ledger's tree of size from is a prefix of its tree of size to", 200, needs(wps.FnLedgerRead)), s.ledgerConsistency)
	register(s, op(get, "/v1/measurements/{id}/documents", "listMeasurementDocuments", "List a measurement's documents (contracts rendered at consensus)", 200, needs(wps.FnMeasurementRead)), s.listDocuments)
	register(s, op(get, "/v1/documents/{id}", "getDocument", "Get a document with the inputs it was rendered from", 200, needs(wps.FnMeasurementRead)), s.getDocument)
	register(s, withPDF(op(get, "/v1/documents/{id}/content", "downloadDocument", "Download a document (application/pdf)", 200, needs(wps.FnMeasurementRead))), s.documentContent)
	register(s, op(get, "/v1/documents/{id}/verify", "verifyDocument", "Check a document's bytes against the SHA-256 stored with them and the one the ledger recorded (rerender=true: and render it again)", 200, needs(wps.FnMeasurementRead)), s.verifyDocument)

	register(s, withSecrets(op(post, "/v1/webhooks", "createWebhook", "Subscribe a URL to events", 201, needs(wps.FnWebhooksManage)), "secret"), s.createWebhook)
	register(s, op(get, "/v1/webhooks", "listWebhooks", "List webhook subscriptions", 200, needs(wps.FnWebhooksManage)), s.listWebhooks)
	register(s, op(get, "/v1/webhooks/secret", "getWebhookSecret", "Show the signing secret", 200, needs(wps.FnWebhooksManage)), s.getSecret)
	register(s, withSecrets(op(post, "/v1/webhooks/secret:rotate", "rotateWebhookSecret", "Rotate the signing secret (the old one signs too for 24 h)", 200, needs(wps.FnWebhooksManage)), "secret", "previous"), s.rotateSecret)
	register(s, op(patch, "/v1/webhooks/{id}", "updateWebhook", "Update a webhook subscription", 200, needs(wps.FnWebhooksManage)), s.updateWebhook)
	register(s, op(del, "/v1/webhooks/{id}", "deleteWebhook", "Delete a webhook subscription", 204, needs(wps.FnWebhooksManage)), s.deleteWebhook)
	register(s, op(post, "/v1/chat-channels", "createChatChannel", "Tell a Slack or Teams channel the work.* messages", 201, needs(wps.FnWebhooksManage)), s.createChatChannel)
	register(s, op(get, "/v1/chat-channels", "listChatChannels", "List chat channels", 200, needs(wps.FnWebhooksManage)), s.listChatChannels)
	register(s, op(get, "/v1/chat-channels/{id}", "getChatChannel", "Show a chat channel", 200, needs(wps.FnWebhooksManage)), s.getChatChannel)
	register(s, op(del, "/v1/chat-channels/{id}", "deleteChatChannel", "Delete a chat channel (its pending messages are cancelled)", 204, needs(wps.FnWebhooksManage)), s.deleteChatChannel)
	register(s, op(get, "/v1/webhook-deliveries", "listWebhookDeliveries", "List deliveries with their attempts", 200, needs(wps.FnWebhooksManage)), s.listDeliveries)
	register(s, op(post, "/v1/webhook-deliveries/{id}:retry", "retryWebhookDelivery", "Send a delivery again", 200, needs(wps.FnWebhooksManage)), s.retryDelivery)

	register(s, withUpload(op(post, "/v1/attachments", "uploadAttachment", "Upload a file (multipart field \"file\", up to 20 MiB)", 201, member)), s.upload)
	register(s, withBinary(op(get, "/v1/attachments/{id}", "downloadAttachment", "Download an attachment", 200, member)), s.download)

	register(s, withUpload(op(post, "/v1/sheets", "uploadSheet", "Upload an .xlsx workbook (multipart field \"file\", up to 20 MiB) that parameters' sheetData link to", 201, needs(wps.FnProcessWrite))), s.uploadSheet)
	register(s, op(get, "/v1/sheets", "listSheets", "List workbooks", 200, needs(wps.FnProcessRead)), s.listSheets)
	register(s, op(get, "/v1/sheets/{id}", "getSheet", "Get a workbook's description", 200, needs(wps.FnProcessRead)), s.getSheet)
	register(s, withXLSX(op(get, "/v1/sheets/{id}/content", "downloadSheet", "Download a workbook as uploaded", 200, needs(wps.FnProcessRead))), s.sheetContent)
	register(s, op(del, "/v1/sheets/{id}", "deleteSheet", "Delete a workbook (409 while a live process or entity links to it)", 204, needs(wps.FnProcessWrite)), s.deleteSheet)
	register(s, withXLSX(op(get, "/v1/measurements/{id}/sheets/{sheetApiId}", "downloadMeasurementSheet", "Download a measurement's filled, recalculated copy of a workbook", 200, needs(wps.FnMeasurementRead))), s.measurementSheet)

	register(s, withCSV(op(get, "/v1/entities/{id}/records:export", "exportRecords", "Export records as CSV (streamed)", 200, needs(wps.FnEntityRead))), s.exportRecords)
}
