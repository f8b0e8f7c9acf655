package wps

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	gojson "github.com/goccy/go-json"
	"golang.org/x/mod/sumdb/tlog"
)

// The ledger (docs/ledger.md) is a Merkle tree log per org, hashed as RFC
// 6962 says (golang.org/x/mod/sumdb/tlog). Its leaves are the org's ledger
// entries: every action, and every change that a measurement's state or
// evidence derives from that is not an action. A write queues its entries
// in its own transaction (Tx.AppendLedger); the org's integrator gives them
// their leaf index later, in batches (Service.IntegrateLedger).

// Kinds of ledger entries. A leaf's data is canonical JSON whose "kind"
// field is one of these.
const (
	LeafAction        = "action"         // an action (actionLeaf)
	LeafChainedAction = "chained-action" // an action of the hash chain that came before the log (actionLeaf with the chain's hashes)
	LeafCreation      = "creation"       // an action recorded with its measurement's creation (actionLeaf with the measurementLeaf)
	LeafMeasurement   = "measurement"    // a measurement created (measurementLeaf)
	LeafOpened        = "opened"         // a PENDING measurement opened by the scheduler (markLeaf)
	LeafSuperseded    = "superseded"     // actions superseded by a rejection or a reproval (markLeaf)
	LeafReproved      = "reproved"       // an action reproved (markLeaf)
	LeafDocument      = "document"       // a generated document's SHA-256 (Leaf)
	LeafSheet         = "sheet"          // a filled workbook's SHA-256 (Leaf)
	LeafMigrated      = "migrated"       // a measurement moved to another version of its process (migrationLeaf)
)

// LedgerEntry is an entry of an org's ledger: queued by the write that
// makes it, then a leaf of the org's tree log.
type LedgerEntry struct {
	OrgID         string
	ID            string // the action's id for an action, else the entry's own
	Kind          string
	MeasurementID string
	// Payload is the leaf data of an entry that is not an action; an
	// action's is made from its row (ActionLeaf), with the creation of its
	// measurement as Payload holds it for a LeafCreation.
	Payload   []byte
	LeafHash  tlog.Hash
	CreatedAt Time
	// Seq orders the entries waiting to be integrated (the store sets it):
	// a measurement's in the order they were written.
	Seq int64
	// Index is the leaf index once integrated, -1 before.
	Index        int64
	IntegratedAt Time
}

// Integrated reports whether the entry has its leaf index.
func (e LedgerEntry) Integrated() bool { return e.Index >= 0 }

// newEntry is an entry that is not an action: data is its leaf's.
func newEntry(orgID, kind, measurementID string, data []byte, at Time) LedgerEntry {
	return LedgerEntry{OrgID: orgID, ID: NewID(), Kind: kind, MeasurementID: measurementID, Payload: data,
		LeafHash: tlog.RecordHash(data), CreatedAt: at, Index: -1}
}

// Leaf is an entry of the ledger that is not an action: a hash of evidence
// that a measurement keeps (a generated document, a filled workbook).
type Leaf struct {
	Kind          string `json:"kind"`          // LeafDocument, LeafSheet, or another name of lower-case letters and '-'
	OrgID         string `json:"orgId"`         //
	MeasurementID string `json:"measurementId"` // the measurement it belongs to
	SubjectID     string `json:"subjectId"`     // the document's or workbook's id
	SHA256        string `json:"sha256"`        // its content's SHA-256, lower-case hex
	At            Time   `json:"at"`
}

var leafKind = regexp.MustCompile(`^[a-z][a-z-]{0,31}$`)

// reservedKinds are the entries the service itself writes.
var reservedKinds = []string{LeafAction, LeafChainedAction, LeafCreation, LeafMeasurement, LeafOpened, LeafSuperseded, LeafReproved, LeafMigrated}

// IsActionLeaf reports whether entries of kind are actions.
func IsActionLeaf(kind string) bool {
	return kind == LeafAction || kind == LeafChainedAction || kind == LeafCreation
}

// AppendLeaf queues a non-action entry in the org's ledger, inside tx: it
// commits with the change that records the evidence (call it in the same
// store.Write), and the integrator makes it a leaf of the org's log within
// a second. It returns the leaf hash (base64), which the verification and
// proofs recompute from l. Errors: CodeInvalid for a malformed l.
func AppendLeaf(tx Tx, l Leaf) (string, error) {
	switch {
	case !leafKind.MatchString(l.Kind) || slices.Contains(reservedKinds, l.Kind):
		return "", Invalid("kind", "%q is not a kind of leaf one may append", l.Kind)
	case l.OrgID == "" || l.SubjectID == "":
		return "", Invalid("subjectId", "a leaf names its org and its subject")
	case !isSHA256Hex(l.SHA256):
		return "", Invalid("sha256", "must be a SHA-256 in lower-case hex")
	}
	e := leafEntry(l)
	return e.LeafHash.String(), tx.AppendLedger([]LedgerEntry{e})
}

// leafEntry is l's entry.
func leafEntry(l Leaf) LedgerEntry {
	return newEntry(l.OrgID, l.Kind, l.MeasurementID, leafJSON(l), l.At)
}

func isSHA256Hex(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && hex.EncodeToString(b) == s
}

// actionLeaf is an action's leaf data. The values written are in it as a
// hash (dataHash), so that a proof shows no value its reader may not see.
type actionLeaf struct {
	Kind             string   `json:"kind"`
	OrgID            string   `json:"orgId"`
	ID               string   `json:"id"`
	MeasurementID    string   `json:"measurementId"`
	StepID           string   `json:"stepId"`
	Opening          int      `json:"opening"`
	Type             string   `json:"type"`
	UserID           string   `json:"userId"`
	Username         string   `json:"username"`
	UserRoles        []string `json:"userRoles"`
	Role             string   `json:"role"`
	PolicyName       string   `json:"policyName"`
	TokenID          string   `json:"tokenId"`
	Observation      string   `json:"observation"`
	TransactionHash  string   `json:"transactionHash"` // the client's, "" when it sent none
	ReprovesActionID string   `json:"reprovesActionId"`
	Route            string   `json:"route"`    // the routing value its consensus used
	DataHash         string   `json:"dataHash"` // SHA-256 (hex) of the action's salt and its values' canonical JSON
	CreatedAt        Time     `json:"createdAt"`
	// The electronic signature of a signed action; absent otherwise, so
	// the leaves of unsigned actions are as they always were.
	Signature *ActionSignature `json:"signature,omitempty"`
	// The user whose seat it filled by a delegation; absent for the
	// actor's own (leaves written before delegations hash the same).
	OnBehalfOf *OnBehalfOf `json:"onBehalfOf,omitempty"`
	// The hash chain's link of an action recorded before the log.
	PrevHash   string `json:"prevHash,omitempty"`
	LedgerHash string `json:"ledgerHash,omitempty"`
	// The creation of its measurement, recorded with it (a measurementLeaf).
	Measurement json.RawMessage `json:"measurement,omitempty"`
}

// ActionLeaf is the leaf data of an action as stored, of kind LeafAction,
// LeafChainedAction or LeafCreation (with creation, the measurementLeaf
// of its measurement's creation, held in the entry's payload).
func ActionLeaf(a Action, kind string, creation []byte) []byte {
	roles := a.UserRoles
	if roles == nil {
		roles = []string{}
	}
	data := a.Data
	if data == nil {
		data = map[string]any{}
	}
	values, err := json.Marshal(data) // as the store writes them: read back (json.Number), they write the same
	if err != nil {
		panic(err) // plain values only
	}
	sum := sha256.Sum256(append([]byte(a.DataSalt), values...)) // no salt: as leaves were before it
	l := actionLeaf{Kind: kind, OrgID: a.OrgID, ID: a.ID, MeasurementID: a.MeasurementID, StepID: a.StepID, Opening: a.Opening,
		Type: a.Type, UserID: a.UserID, Username: a.Username, UserRoles: roles, Role: a.Role, PolicyName: a.PolicyName,
		TokenID: a.TokenID, Observation: a.Observation, TransactionHash: clientHash(a), ReprovesActionID: a.ReprovesActionID,
		Route: a.Route, DataHash: hex.EncodeToString(sum[:]), CreatedAt: a.CreatedAt, Signature: a.Signature}
	if a.OnBehalfOf.UserID != "" {
		l.OnBehalfOf = &a.OnBehalfOf
	}
	switch kind {
	case LeafChainedAction:
		l.PrevHash, l.LedgerHash = a.PrevHash, a.LedgerHash
	case LeafCreation:
		l.Measurement = creation
	}
	return leafJSON(l)
}

// clientHash is the transactionHash the client sent ("" when the ledger's
// hash stands in for it).
func clientHash(a Action) string {
	if a.TransactionHash == a.LedgerHash {
		return ""
	}
	return a.TransactionHash
}

// sealAction sets a new action's leaf hash, its ledgerHash (the leaf hash in
// hex) and its transactionHash (client's, else the ledgerHash), and returns
// its entry; with creation (a measurementLeaf), the action's leaf holds
// its measurement's creation too (LeafCreation).
func sealAction(a *Action, client string, creation []byte) LedgerEntry {
	a.TransactionHash, a.LedgerHash, a.PrevHash = client, "", "" // clientHash(*a) is client
	if a.DataSalt == "" {
		a.DataSalt = newSalt()
	}
	kind := LeafAction
	if creation != nil {
		kind = LeafCreation
	}
	h := tlog.RecordHash(ActionLeaf(*a, kind, creation))
	a.LeafHash = h.String()
	a.LedgerHash = hex.EncodeToString(h[:])
	if client == "" {
		a.TransactionHash = a.LedgerHash
	}
	return LedgerEntry{OrgID: a.OrgID, ID: a.ID, Kind: kind, MeasurementID: a.MeasurementID, Payload: creation, LeafHash: h, CreatedAt: a.CreatedAt, Index: -1}
}

// measurementLeaf records a measurement's creation: what the engine
// started it from.
type measurementLeaf struct {
	Kind          string `json:"kind"`
	OrgID         string `json:"orgId"`
	MeasurementID string `json:"measurementId"`
	ProcessID     string `json:"processId"`
	Version       int    `json:"version"`
	CreatedBy     string `json:"createdBy"`
	StartedAt     Time   `json:"startedAt"` // the instant its steps opened at (its occurrence's when PENDING)
	Pending       bool   `json:"pending"`
	CreatedAt     Time   `json:"createdAt"`
}

// markLeaf records a change of actions or of a measurement that is not an
// action: actions superseded or reproved (by the action that did it), a
// PENDING measurement opened.
type markLeaf struct {
	Kind          string   `json:"kind"`
	OrgID         string   `json:"orgId"`
	MeasurementID string   `json:"measurementId"`
	ActionIDs     []string `json:"actionIds,omitempty"`
	ByActionID    string   `json:"byActionId,omitempty"`
	At            Time     `json:"at"`
}

// MeasurementEntry is the entry of a measurement's creation, from which
// the engine started it at startedAt (pending: a scheduled occurrence).
func MeasurementEntry(m Measurement, startedAt Time, pending bool) LedgerEntry {
	data := creationJSON(m, startedAt, pending)
	return newEntry(m.OrgID, LeafMeasurement, m.ID, data, m.CreatedAt)
}

// creationJSON is a measurementLeaf.
func creationJSON(m Measurement, startedAt Time, pending bool) []byte {
	return leafJSON(measurementLeaf{Kind: LeafMeasurement, OrgID: m.OrgID, MeasurementID: m.ID, ProcessID: m.ProcessID,
		Version: m.Version, CreatedBy: m.CreatedBy, StartedAt: startedAt, Pending: pending, CreatedAt: m.CreatedAt})
}

// MarkEntry is the entry of actions marked (LeafSuperseded, LeafReproved)
// by the action byActionID, or of a measurement opened (LeafOpened).
func MarkEntry(kind, orgID, measurementID string, actionIDs []string, byActionID string, at Time) LedgerEntry {
	data := leafJSON(markLeaf{Kind: kind, OrgID: orgID, MeasurementID: measurementID, ActionIDs: actionIDs, ByActionID: byActionID, At: at})
	return newEntry(orgID, kind, measurementID, data, at)
}

// leafJSON is v as canonical JSON: fields in struct order, map keys
// sorted, no HTML escaping.
func leafJSON(v any) []byte {
	var b bytes.Buffer
	enc := gojson.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // plain values only
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// leafData is the data an entry's leaf hash covers: an action's from its
// row (nil when the row is missing), the payload of the others.
func leafData(e LedgerEntry, a *Action) []byte {
	if IsActionLeaf(e.Kind) {
		if a == nil {
			return nil
		}
		return ActionLeaf(*a, e.Kind, e.Payload)
	}
	return e.Payload
}

// LedgerHash is the hash chain's link of an action (the ledger before the
// Merkle log): SHA-256 over the previous link's hash and the action's
// canonical JSON of then. The verification checks the links of the actions
// recorded then (LeafChainedAction) with it.
func LedgerHash(prev string, a Action, clientHash string) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(chainJSON(a, clientHash))
	return hex.EncodeToString(h.Sum(nil))
}

// chainBody is an action's canonical JSON in the hash chain.
type chainBody struct {
	ID               string         `json:"id"`
	OrgID            string         `json:"orgId"`
	Seq              int64          `json:"seq"`
	MeasurementID    string         `json:"measurementId"`
	StepID           string         `json:"stepId"`
	Opening          int            `json:"opening"`
	Type             string         `json:"type"`
	UserID           string         `json:"userId"`
	Username         string         `json:"username"`
	UserRoles        []string       `json:"userRoles"`
	Role             string         `json:"role"`
	PolicyName       string         `json:"policyName"`
	TokenID          string         `json:"tokenId"`
	Observation      string         `json:"observation"`
	ClientHash       string         `json:"clientTransactionHash"`
	ReprovesActionID string         `json:"reprovesActionId"`
	Data             map[string]any `json:"data"`
	CreatedAt        int64          `json:"createdAt"`
}

func chainJSON(a Action, clientHash string) []byte {
	roles := a.UserRoles
	if roles == nil {
		roles = []string{}
	}
	data := a.Data
	if data == nil {
		data = map[string]any{}
	}
	body, err := json.Marshal(chainBody{ID: a.ID, OrgID: a.OrgID, Seq: a.Seq, MeasurementID: a.MeasurementID, StepID: a.StepID,
		Opening: a.Opening, Type: a.Type, UserID: a.UserID, Username: a.Username, UserRoles: roles, Role: a.Role,
		PolicyName: a.PolicyName, TokenID: a.TokenID, Observation: a.Observation, ClientHash: clientHash,
		ReprovesActionID: a.ReprovesActionID, Data: data, CreatedAt: a.CreatedAt.Millis()})
	if err != nil {
		panic(err) // plain values only
	}
	return body
}

// Checkpoints: C2SP signed notes (https://c2sp.org/tlog-checkpoint) whose
// text is the origin, the tree size and the root hash.

// LedgerOrigin is the origin line of an org's checkpoints.
func LedgerOrigin(orgID string) string { return "wps/" + orgID }

// checkpointText is a checkpoint's text (the note's body).
func checkpointText(orgID string, size int64, root tlog.Hash) string {
	return LedgerOrigin(orgID) + "\n" + strconv.FormatInt(size, 10) + "\n" + root.String() + "\n"
}

// Checkpoint is a checkpoint's text, parsed.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// ParseCheckpoint parses a checkpoint's text (a verified note's Text):
// origin, size and root hash lines, then any extension lines.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := bytes.SplitN([]byte(text), []byte("\n"), 4)
	if len(lines) < 4 || len(lines[0]) == 0 {
		return Checkpoint{}, errors.New("a checkpoint has an origin, a size and a root hash, one per line")
	}
	size, err := strconv.ParseInt(string(lines[1]), 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != string(lines[1]) {
		return Checkpoint{}, fmt.Errorf("checkpoint: bad tree size %q", lines[1])
	}
	root, err := tlog.ParseHash(string(lines[2]))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: bad root hash %q", lines[2])
	}
	return Checkpoint{Origin: string(lines[0]), Size: size, Root: root}, nil
}

// newSalt is a new action's DataSalt: 16 random bytes, in hex.
func newSalt() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on the systems Go supports
	}
	return hex.EncodeToString(b)
}
