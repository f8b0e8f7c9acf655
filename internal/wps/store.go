package wps

import (
	"context"

	"golang.org/x/mod/sumdb/tlog"
)

// Store persists the domain. Every change runs inside Write, every
// consistent read inside Read; fn sees one transaction and may run more than
// once (on a retryable conflict), so it must have no effects outside tx.
// Stores are dumb: they persist and query. Rules live in Service.
type Store interface {
	Read(ctx context.Context, fn func(tx Tx) error) error
	// View is a read whose statements need not share one snapshot (each
	// sees its own): for answers that read what must agree in one
	// statement. It saves PostgreSQL the transaction's round trips.
	View(ctx context.Context, fn func(tx Tx) error) error
	Write(ctx context.Context, fn func(tx Tx) error) error
	Ping(ctx context.Context) error
	Close() error
}

// Tx is one transaction. Every method takes the org id where rows belong to
// an org: a row of another org is simply not found. Lookups of a missing row
// return a CodeNotFound Error; unique violations a CodeConflict Error.
type Tx interface {
	SheetStore

	// ClaimBootstrap returns true exactly once per database.
	ClaimBootstrap(at Time) (bool, error)

	CreateOrg(o Org) error
	GetOrg(orgID string) (Org, error)
	UpdateOrg(o Org) error
	// LockOrg serializes changes that check an org-wide invariant.
	LockOrg(orgID string) error

	// PutCalendar keeps a version of the org's business calendar (its
	// calendar as JSON) in force from from on; ListCalendars lists them, oldest first.
	PutCalendar(orgID string, from Time, spec string) error
	ListCalendars(orgID string) ([]CalendarVersion, error)

	CreateUser(u User) error
	GetUser(orgID, userID string) (User, error)
	// LockUser is GetUser that also locks the user's row (PostgreSQL) until
	// the transaction ends: changes that depend on the user's status or
	// password serialize on it.
	LockUser(orgID, userID string) (User, error)
	FindUserByEmail(orgID, email string) (User, error)
	ListUsers(orgID string, p Page) ([]User, int, error)
	// FindUsers is ListUsers of the users matching every field of q that is set.
	FindUsers(orgID string, q UserQuery, p Page) ([]User, int, error)
	SetUserRoles(orgID, userID string, roles []string, at Time) error
	// RecordChanges keeps what reports read of a write's changes of a
	// measurement (internal/reports derives their facts), in the write's
	// transaction and last (other writers of the process may wait for
	// those rows).
	RecordChanges(changes []Change) error
	// OpenMeasurements counts the measurements of each of the org's
	// processes (by id) that are not APPROVED.
	OpenMeasurements(orgID string) (map[string]int64, error)

	// CountUsersWithRole counts the org's ACTIVE users holding role.
	CountUsersWithRole(orgID, role string) (int, error)
	// UpdateUser saves email, name, status, password hash, last sign-in and
	// external id.
	UpdateUser(u User) error
	// FindUsersByEmail finds the users with email in every org, the most
	// recently signed in first.
	FindUsersByEmail(email string) ([]User, error)
	RevokeUserAPIKeys(orgID, userID string, at Time) error

	// GetSSO reads an org's SSO settings (CodeNotFound when off); PutSSO
	// replaces them and the org's email domains; DeleteSSO removes both.
	GetSSO(orgID string) (SSOSettings, error)
	PutSSO(s SSOSettings) error
	DeleteSSO(orgID string) error
	// SSOOrgByDomain finds the org whose SSO claims an email domain.
	SSOOrgByDomain(domain string) (string, error)
	// RecordSSOSignIn keeps a user's last sign-in through SSO (one row per
	// user, replaced); ListSSOSignIns lists the org's; SSOSignInAt is when
	// the user last signed in so (CodeNotFound: never).
	RecordSSOSignIn(r SSOSignInRecord) error
	ListSSOSignIns(orgID string) ([]SSOSignInRecord, error)
	SSOSignInAt(orgID, userID string) (Time, error)
	CreateSession(s Session) error
	GetSessionByHash(hash string) (Session, error)
	TouchSession(orgID, id string, at Time) error
	// DeleteSessions ends every session of a user but exceptID ("" for none).
	DeleteSessions(orgID, userID, exceptID string) error
	DeleteSession(orgID, id string) error
	// DeleteExpiredSessions removes up to limit sessions that expired
	// before expiredBefore or were last seen before idleBefore.
	DeleteExpiredSessions(expiredBefore, idleBefore Time, limit int) (int, error)

	CreateAPIKey(k APIKey) error
	// GetAPIKeyByHash finds a live (not revoked) key by the hash of its secret.
	GetAPIKeyByHash(hash string) (APIKey, error)
	ListAPIKeys(orgID, userID string) ([]APIKey, error)
	RevokeAPIKey(orgID, userID, keyID string, at Time) error

	CreateInvite(i Invite) error
	GetInvite(orgID, id string) (Invite, error)
	GetInviteByTokenHash(hash string) (Invite, error)
	FindPendingInvite(orgID, email string) (Invite, error)
	ListInvites(orgID string) ([]Invite, error)
	SetInviteStatus(orgID, id, status string) error

	// CreateNotification writes a message to the outbox.
	CreateNotification(n Notification) error
	ListNotifications(orgID string, q NotificationQuery) ([]Notification, int, error)
	// DueNotifications lists up to limit pending messages (of any org) due
	// by now that no worker holds, oldest first. It locks nothing.
	DueNotifications(now Time, limit int) ([]string, error)
	// ClaimNotifications leases to one worker until leaseUntil those of ids
	// that are still due and free (SKIP LOCKED on PostgreSQL), counting the
	// attempt.
	ClaimNotifications(ids []string, now, leaseUntil Time) ([]Notification, error)
	// FinishNotification records an attempt's outcome: status, attempts,
	// next attempt, last error, sent time, body, subject (as worded); the lease ends.
	FinishNotification(n Notification) error

	// GetNotificationPref is the user's choice of mail about work ("" when
	// never set: immediate).
	GetNotificationPref(orgID, userID string) (string, error)
	PutNotificationPref(orgID, userID, email string, at Time) error
	// ListNotificationPrefs maps the org's users who chose other than
	// immediate to their choice.
	ListNotificationPrefs(orgID string) (map[string]string, error)
	// ClaimDigests returns up to limit users (any org) who chose daily and
	// whose next digest is due at or before now, locked until the
	// transaction ends (SKIP LOCKED on PostgreSQL: each once across
	// replicas); SetDigestDue records the one sent and when the next is due.
	ClaimDigests(now Time, limit int) ([]DigestDue, error)
	SetDigestDue(orgID, userID string, sent, next Time) error

	CreatePasswordReset(r PasswordReset) error
	// GetPasswordResetByHash finds a reset by its token's hash (any org),
	// locked until the transaction ends on PostgreSQL.
	GetPasswordResetByHash(hash string) (PasswordReset, error)
	// EndPasswordResets marks every unused reset of a user used at at.
	EndPasswordResets(orgID, userID string, at Time) error

	CreatePolicy(p Policy) error
	GetPolicy(orgID, id string) (Policy, error)
	ListPolicies(orgID string) ([]Policy, error)
	UpdatePolicy(p Policy) error
	DeletePolicy(orgID, id string) error

	CreateEntity(e Entity) error
	// GetEntity and FindEntityByName find live (not deleted) entities only.
	GetEntity(orgID, id string) (Entity, error)
	FindEntityByName(orgID, name string) (Entity, error)
	// ListEntities pages the org's live entities, or its deleted ones.
	ListEntities(orgID string, p Page, search string, deleted bool) ([]Entity, int, error)
	// UpdateEntity saves an entity read in the same write (deleted ones
	// too: a policy renamed follows into them).
	UpdateEntity(e Entity) error
	SoftDeleteEntity(orgID, id string, at Time) error
	// GetDeletedEntity finds a deleted entity.
	GetDeletedEntity(orgID, id string) (Entity, error)
	// RestoreEntity makes a deleted entity live again: CodeNotFound when
	// it is not deleted, CodeConflict when a live entity has its name.
	RestoreEntity(orgID, id string, at Time) error
	// EntitiesMentioning lists the entities (live and deleted) whose stored
	// definition contains text.
	EntitiesMentioning(orgID, text string) ([]Entity, error)
	// EntityReferrers names the live entities and processes that refer to an entity.
	EntityReferrers(orgID, entityID string) ([]string, error)

	// CreateRecord writes a record; one with ImportJobID is hidden from
	// every other method until that job is SUCCEEDED.
	CreateRecord(r Record) error
	GetRecord(orgID, entityID, id string) (Record, error)
	UpdateRecord(r Record) error
	DeleteRecord(orgID, entityID, id string) error
	ListRecords(orgID, entityID string, q RecordQuery) ([]Record, int, error)
	ListRecordsAfter(orgID, entityID, afterID string, limit int) ([]Record, error)
	ListRecordIDs(orgID, entityID string) ([]string, error)
	// InsertRecordIndex adds one indexed value; a unique one may conflict.
	InsertRecordIndex(row IndexRow) error
	DeleteRecordIndex(orgID, recordID string) error
	// DeleteRecordIndexValue removes one indexed value of a record.
	DeleteRecordIndexValue(row IndexRow) error
	// DeleteHiddenRecord removes a record an import job hides (a job's
	// holder of unique values); nothing when there is none.
	DeleteHiddenRecord(orgID, id string) error

	CreateImportJob(j ImportJob) error
	GetImportJob(orgID, id string) (ImportJob, error)
	// CountOpenImportJobs counts the org's jobs not yet SUCCEEDED or FAILED.
	CountOpenImportJobs(orgID string) (int, error)
	// ClaimImportJob leases to owner, until leaseUntil, a job that is not
	// settled and whose lease ended (a PENDING job has none), skipping one
	// that another transaction holds and those of an org that holds
	// perOrg leased jobs already: of the org with the fewest leased jobs,
	// then of the org that started a job least recently, its oldest.
	// PENDING becomes RUNNING and Attempts counts the claims. CodeNotFound
	// when there is none.
	ClaimImportJob(now, leaseUntil Time, owner string, perOrg int) (ImportJob, error)
	// UpdateImportJob saves a job's status, progress, outcome, lease and
	// digest while j.LeaseOwner holds it; CodeNotFound when it does not.
	UpdateImportJob(j ImportJob) error
	// SettleImportRecords ends up to limit of a job's records: with
	// publish they become plain records, else they are deleted with their
	// index rows and attachment references. It returns how many.
	SettleImportRecords(orgID, jobID string, publish bool, limit int) (int, error)

	CreateProcess(p Process) error
	// GetProcess finds a live process with its steps at version, or at its
	// latest version when version is 0.
	GetProcess(orgID, id string, version int) (Process, error)
	FindProcessByCode(orgID, code string) (Process, error)
	FindProcessByLabel(orgID, label string) (Process, error)
	// GetProcessVersion finds a version even of a deleted process (its
	// measurements keep running).
	GetProcessVersion(orgID, id string, version int) (Process, error)
	// ListProcesses pages the org's live processes, or its deleted ones,
	// at their latest versions.
	ListProcesses(orgID string, p Page, search string, deleted bool) ([]Process, int, error)
	UpdateProcess(p Process) error
	SoftDeleteProcess(orgID, id string, at Time) error
	// GetDeletedProcess finds a deleted process at its latest version.
	GetDeletedProcess(orgID, id string) (Process, error)
	// RestoreProcess makes a deleted process live again: CodeNotFound when
	// it is not deleted, CodeConflict when a live process has its code or label.
	RestoreProcess(orgID, id string, at Time) error
	// ProcessActionsMentioning pages (by id, after afterID) the actions of
	// the process's measurements whose stored data contains text, with
	// their ids and data only.
	ProcessActionsMentioning(orgID, processID, text, afterID string, limit int) ([]Action, error)
	CreateProcessVersion(v ProcessVersion) error
	// UpdateProcessVersion saves the version's steps, and ChangedBy and
	// ChangedAt unless ChangedBy is "" (they stay as they were).
	UpdateProcessVersion(v ProcessVersion) error
	ListProcessVersions(orgID, processID string) ([]ProcessVersion, error)
	// LockProcessVersion marks a version as used by a measurement.
	LockProcessVersion(orgID, processID string, version int) error
	// ProcessVersionsMentioning lists the versions (of live and deleted
	// processes) whose stored steps contain text; Live tells the latest
	// version of a live process.
	ProcessVersionsMentioning(orgID, text string) ([]MentioningVersion, error)

	// CreateMeasurement writes a new measurement, counted, with its open
	// steps, under the process's next number: it sets m.Seq and m.Name
	// (namePrefix-seq). The number stays locked until commit, so call it
	// late in the transaction.
	CreateMeasurement(m *Measurement, namePrefix string, open []OpenStep) error
	// GetMeasurement locks the row in a write transaction.
	GetMeasurement(orgID, id string) (Measurement, error)
	// ReadMeasurement reads a measurement with its process version and its
	// actions (in order), in one statement unless its actions are
	// not all there (ActionCount). In a write transaction it locks the
	// measurement, as GetMeasurement does, and the actions are the ones the
	// lock's previous holder committed.
	ReadMeasurement(orgID, id string) (Measurement, Process, []Action, error)
	// LiveMeasurementsOf lists the ids of the measurements of a process's
	// version that are not APPROVED, oldest first.
	LiveMeasurementsOf(orgID, processID string, version int) ([]string, error)
	// UpdateMeasurement saves state, status and version; oldStatus keeps the counts right.
	UpdateMeasurement(m Measurement, oldStatus string) error
	// ListMeasurements pages the measurements q selects, newest first,
	// with their total. With q.Actionable, those with an open step that
	// has a seat with a key of q.Filler.Keys, of which q.Filler.UserID
	// fills no seat (see OpenStep), found through an index of them.
	ListMeasurements(orgID string, q MeasurementQuery) ([]ListedMeasurement, int, error)
	// SetOpenSteps replaces the measurement's open steps, with their seats
	// and fillers (the actionable index).
	SetOpenSteps(orgID, measurementID string, steps []OpenStep) error
	// RenameSeatPolicy makes the actionable index, and the seats filled in
	// measurements' states, follow a renamed policy.
	RenameSeatPolicy(orgID, old, name string) error
	// HoldMeasurementWrites makes every other write of measurements wait
	// until this transaction ends, once those under way have ended (on
	// PostgreSQL a lock of the table; on SQLite nothing: its one writer
	// runs one transaction at a time). A policy rename takes it first, so
	// that no action fills a seat under the old name after the rename
	// read the seats, nor reads the old name after it.
	HoldMeasurementWrites() error

	GetAction(orgID, id string) (Action, error)
	ListActions(orgID, measurementID string) ([]Action, error)
	// InsertActions writes new actions; the store numbers them (Seq) in
	// the order of each measurement's actions.
	InsertActions(actions []Action) error
	MarkSuperseded(orgID, measurementID string, stepIDs []string) error
	MarkReproved(orgID, actionID string) error

	// AppendLedger queues ledger entries, in order, to be integrated into
	// their orgs' logs; it locks nothing that another write waits for.
	AppendLedger(entries []LedgerEntry) error
	// LedgerBacklog lists the orgs with entries waiting to be integrated
	// or a tree larger than its last checkpoint.
	LedgerBacklog() ([]string, error)
	// LockLedgerLog reads and locks an org's log state (made on first
	// use) for its integrator; false when another transaction holds it.
	LockLedgerLog(orgID string) (LedgerLog, bool, error)
	// GetLedgerLog reads an org's log state (zero before its first leaf).
	GetLedgerLog(orgID string) (LedgerLog, error)
	SaveLedgerLog(l LedgerLog) error
	// PendingLedger lists up to limit of an org's queued entries, in order.
	PendingLedger(orgID string, limit int) ([]LedgerEntry, error)
	// IntegrateLedger makes queued entries leaves (e.Index set) and stores
	// the tree's tiles that grew (data: tlog.ReadTileData's).
	IntegrateLedger(orgID string, leaves []LedgerEntry, tiles []tlog.Tile, data [][]byte) error
	// ReadLedgerTiles reads stored tiles of an org's tree by level and
	// number (as wide as stored; nil for one not stored).
	ReadLedgerTiles(orgID string, tiles []tlog.Tile) ([][]byte, error)
	// ListLedgerLeaves pages an org's leaves from index from on, each
	// with its action's row when it is an action (nil when missing).
	ListLedgerLeaves(orgID string, from int64, limit int) ([]LedgerLeaf, error)
	// GetLedgerEntry finds an entry of a measurement by id, integrated
	// or queued.
	GetLedgerEntry(orgID, measurementID, id string) (LedgerEntry, error)
	// MeasurementLedger lists a measurement's entries in log order: its
	// leaves, then its queued entries.
	MeasurementLedger(orgID, measurementID string) ([]LedgerEntry, error)
	// ListPendingLedger pages an org's queued entries after seq, each with
	// its action's row as ListLedgerLeaves.
	ListPendingLedger(orgID string, afterSeq int64, limit int) ([]LedgerLeaf, error)
	// ListMeasurementIDs pages an org's measurement ids after after.
	ListMeasurementIDs(orgID, after string, limit int) ([]string, error)
	// GetLedgerKey reads the installation's signing key (CodeNotFound
	// before it is made); CreateLedgerKey stores it once (CodeConflict
	// after).
	GetLedgerKey() (LedgerKey, error)
	CreateLedgerKey(k LedgerKey) error

	// InsertAuditEvent writes an audit event (its Leaf, LeafHash and the
	// columns lists filter on). GetAuditEvent reads one (CodeNotFound),
	// ListAuditEvents pages those q matches, newest first, with their
	// total; CountAuditEvents counts the org's events and its ledger's
	// audit entries (integrated or queued), in one snapshot.
	InsertAuditEvent(e AuditEvent) error
	GetAuditEvent(orgID, id string) (AuditEvent, error)
	ListAuditEvents(orgID string, q AuditQuery) ([]AuditEvent, int, error)
	CountAuditEvents(orgID string) (events, entries int64, err error)

	// ClaimUniqueValue records that a measurement holds a unique parameter's
	// value (replacing what it held); a conflict means another measurement of
	// the process holds it.
	ClaimUniqueValue(orgID, processID, paramID, value, measurementID string) error

	// LatestWithValue finds the newest measurement of a process with a
	// counting (not superseded, not reproved) action that wrote value into
	// the parameter; CodeNotFound when none did.
	LatestWithValue(orgID, processID, paramID string, value any) (string, error)

	CreateTemplate(t Template) error
	// GetTemplate finds a template at version (its current one when 0):
	// live ones only unless withDeleted. In a write transaction it takes a
	// shared lock of the template (PostgreSQL) that edits wait for.
	GetTemplate(orgID, id string, version int, withDeleted bool) (Template, error)
	FindTemplateByName(orgID, name string) (Template, error)
	// LockTemplate reads a live template at its current version and locks
	// it against renders and edits until the transaction ends.
	LockTemplate(orgID, id string) (Template, error)
	ListTemplates(orgID string, p Page, search string) ([]Template, int, error)
	ListTemplateVersions(orgID, id string) ([]Template, error)
	// SaveTemplate writes t's name and version, and its body and entity as
	// a new version row or over its current one.
	SaveTemplate(t Template, newVersion bool) error
	SoftDeleteTemplate(orgID, id string, at Time) error

	// CreateDocument stores a rendered document with its bytes.
	CreateDocument(d Document) error
	// SupersedeDocuments marks the documents of steps re-opened as superseded.
	SupersedeDocuments(orgID, measurementID string, stepIDs []string) error
	// ListDocuments lists a measurement's documents, without their bytes.
	ListDocuments(orgID, measurementID string) ([]Document, error)
	// GetDocument finds a document, with its bytes when content.
	GetDocument(orgID, id string, content bool) (Document, error)

	CreateAttachment(a Attachment) error
	GetAttachment(orgID, id string) (Attachment, error)
	AddAttachmentRefs(refs []AttachmentRef) error
	// DeleteRecordAttachmentRefs forgets what a record referred to.
	DeleteRecordAttachmentRefs(orgID, recordID string) error
	// ListAttachmentRefs lists (some of) the values that refer to an attachment.
	ListAttachmentRefs(orgID, attachmentID string) ([]AttachmentRef, error)

	InsertEvents(es []Event) error // in one statement
	GetEvent(orgID, id string) (Event, error)

	CreateWebhook(w Webhook) error
	CreateChatChannel(c ChatChannel) error
	GetChatChannel(orgID, id string) (ChatChannel, error)
	ListChatChannels(orgID string) ([]ChatChannel, error)
	DeleteChatChannel(orgID, id string) error

	// CreateDelegation writes a delegation.
	CreateDelegation(d Delegation) error
	// GetDelegation reads one, revoked or not. Errors: CodeNotFound.
	GetDelegation(orgID, id string) (Delegation, error)
	// ListDelegations lists the delegations not revoked that end after
	// now, given or received by userID ("": the org's), by start.
	ListDelegations(orgID, userID string, now Time) ([]Delegation, error)
	// RevokeDelegation marks one revoked at at. Errors: CodeNotFound.
	RevokeDelegation(orgID, id string, at Time) error
	GetWebhook(orgID, id string) (Webhook, error)
	ListWebhooks(orgID string) ([]Webhook, error)
	UpdateWebhook(w Webhook) error
	DeleteWebhook(orgID, id string) error
	GetSigningSecret(orgID string) (SigningSecret, error)
	PutSigningSecret(s SigningSecret) error

	CreateDelivery(d Delivery) error
	GetDelivery(orgID, id string) (Delivery, error)
	UpdateDelivery(d Delivery) error
	// FinishDelivery records an attempt's outcome (as UpdateDelivery) on a
	// delivery that is still PENDING: one cancelled while it was in flight
	// stays cancelled, unless it arrived (SUCCEEDED).
	FinishDelivery(d Delivery) error
	// CancelDeliveries ends the PENDING deliveries of a subscription
	// (status CANCELLED, lastError reason), in flight or not.
	CancelDeliveries(orgID, webhookID, reason string, now Time) error
	ListDeliveries(orgID string, q DeliveryQuery) ([]Delivery, int, error)
	// DueDeliveries lists, in the order to claim them, up to limit due
	// deliveries (of any org) that no worker holds, leaving out those
	// behind an earlier pending delivery to the same URL for the same
	// measurement (so each receiver sees a measurement's events in order).
	// Orgs take turns: each org's oldest due delivery comes before any
	// org's second, counting the deliveries an org has leased already (an
	// org with 8 in flight waits behind one with none). At most
	// perDestination deliveries of one org to one destination
	// (DestinationOf their URL) are leased at once, those leased before
	// included (orgs that share a receiver's host do not share its places).
	// It locks nothing: ClaimDeliveries leases them.
	DueDeliveries(now Time, limit, perDestination int) ([]string, error)
	// ClaimDeliveries leases to one worker until leaseUntil those of ids
	// (from DueDeliveries) that are still due, free and not waiting behind
	// an earlier delivery, in the order given, skipping those another
	// worker holds or is claiming.
	ClaimDeliveries(ids []string, now, leaseUntil Time) ([]Delivery, error)
	AddAttempt(a Attempt) error

	// ClaimOverdue marks up to limit open steps past their deadline as
	// notified and returns them; each opening is returned once.
	ClaimOverdue(now Time, limit int) ([]OpenStep, error)
	// ClaimEscalations locks and returns up to limit open steps whose next
	// escalation is due (escalate_at <= now), skipping those another
	// transaction holds; MarkEscalated, in the same transaction, records
	// how many of the opening's escalations were emitted and when the next
	// one is due (nil: none left), so each is returned once.
	ClaimEscalations(now Time, limit int) ([]OpenStep, error)
	MarkEscalated(o OpenStep) error
	// RecurringProcesses lists live processes whose first step recurs.
	RecurringProcesses() ([]Process, error)
	// ClaimOccurrence records that the occurrence at of a process has its
	// measurement; false when it was recorded before.
	ClaimOccurrence(orgID, processID string, at Time, measurementID string) (bool, error)
	// SkipOccurrences records that the occurrences of a process up to until
	// are settled without measurements (LastOccurrence is then at least until).
	SkipOccurrences(orgID, processID string, until Time) error
	// LastOccurrence is the latest recorded occurrence of a process, or nil.
	LastOccurrence(orgID, processID string) (*Time, error)
	// DuePending lists PENDING measurements whose occurrence is at or
	// before now (at most limit).
	DuePending(now Time, limit int) ([]Occurrence, error)

	// Idempotency records answers to POST requests with an Idempotency-Key.
	GetIdempotent(scope, key string) (Idempotent, error)
	// ReserveIdempotent inserts a pending record; a conflict means the key is taken.
	ReserveIdempotent(r Idempotent) error
	// The next three touch only the record reserved at createdAt: a request
	// whose lease ran out (and whose key was claimed anew) changes nothing.
	// ExtendIdempotent renews a pending record's lease.
	ExtendIdempotent(scope, key string, createdAt, until Time) error
	// CompleteIdempotent keeps the answer; not found if the record is gone.
	CompleteIdempotent(r Idempotent) error
	// CommitIdempotent marks the record reserved at createdAt committed:
	// its request's changes are (Store.Write does it in their transaction).
	CommitIdempotent(scope, key string, createdAt Time) error
	DeleteIdempotent(scope, key string, createdAt Time) error
	// DeleteIdempotentBefore removes up to limit records created before.
	DeleteIdempotentBefore(before Time, limit int) (int, error)
}

// IdempotencyClaim is the Idempotency-Key record a request holds (the one
// reserved at CreatedAt). A Store's Write, given a context that carries one
// (WithIdempotency), marks the record committed in the same transaction as
// the changes it commits: a request whose answer is lost (its server killed
// between its commit and its answer) is then never run again.
type IdempotencyClaim struct {
	Scope, Key string
	CreatedAt  Time
}

type idempotencyCtxKey struct{}

// WithIdempotency is ctx carrying the request's claim, for Store.Write.
func WithIdempotency(ctx context.Context, c IdempotencyClaim) context.Context {
	return context.WithValue(ctx, idempotencyCtxKey{}, c)
}

// IdempotencyOf is the claim ctx carries, if any.
func IdempotencyOf(ctx context.Context) (IdempotencyClaim, bool) {
	c, ok := ctx.Value(idempotencyCtxKey{}).(IdempotencyClaim)
	return c, ok
}

// MentioningVersion is a stored process version found by text, with the
// name of its process and whether it is the live latest version.
type MentioningVersion struct {
	ProcessVersion
	ProcessName string
	Live        bool
}

// Idempotent is the stored first answer to a POST with an Idempotency-Key.
type Idempotent struct {
	Scope       string // the API key or session id, or "anonymous:" and the request hash
	Key         string
	RequestHash string // SHA-256 of method, path and body
	Done        bool   // false while the first request is in flight
	Committed   bool   // the first request's changes are committed (in their own transaction)
	LeaseUntil  Time   // a pending record whose lease ran out was abandoned
	Status      int
	Header      map[string]string
	Body        []byte
	CreatedAt   Time
}

// SheetStore keeps workbooks and the measurements' filled copies.
type SheetStore interface {
	CreateSheet(sh Sheet, content []byte) error
	GetSheet(orgID, id string) (Sheet, error)
	SheetContent(orgID, id string) ([]byte, error)
	ListSheets(orgID string, page Page) ([]Sheet, int, error)
	DeleteSheet(orgID, id string) error
	// SheetUsers names the live processes and entities that link a workbook.
	SheetUsers(orgID, id string) ([]string, error)
	PutMeasurementSheet(ms MeasurementSheet) error
	GetMeasurementSheet(orgID, measurementID, sheetID string) (MeasurementSheet, error)
}
