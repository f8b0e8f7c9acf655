package wps

import "wps/internal/engine"

// Measurement is one run of a process, at the version it started on.
type Measurement struct {
	ID        string
	OrgID     string
	ProcessID string
	Version   int
	Name      string // {code}-{n}
	Seq       int64
	Status    string
	State     engine.State
	CreatedBy string
	CreatedAt Time
	UpdatedAt Time
	// ActionCount is how many actions it has: a reader of its actions can
	// tell whether it has them all (see Tx.ReadMeasurement).
	ActionCount int
}

// Action is one recorded act on a measurement, an entry of the org's ledger.
type Action struct {
	ID               string
	OrgID            string
	MeasurementID    string
	StepID           string
	Opening          int // which opening of the step it belongs to
	Seq              int64
	Type             string
	UserID           string
	Username         string
	UserRoles        []string
	Role             string // the role that counted for the seat
	PolicyName       string // the seat's policy
	TokenID          string
	Observation      string
	TransactionHash  string
	Data             map[string]any // parameter id → canonical value (WRITE_DATA)
	ReprovesActionID string
	Reproved         bool
	Superseded       bool
	// Route is the routing value the action's consensus used ("" for none).
	Route string
	// Signature is the action's electronic signature (nil: not signed).
	Signature *ActionSignature
	// OnBehalfOf is the user whose seat the action filled by a delegation
	// (zero for the actor's own).
	OnBehalfOf OnBehalfOf
	// PrevHash and LedgerHash are the action's link in the hash chain that
	// came before the log; since, PrevHash is "" and LedgerHash the leaf
	// hash in hex. LeafHash is its leaf hash (base64).
	PrevHash   string
	LedgerHash string
	LeafHash   string
	CreatedAt  Time
	// DataSalt is the random value its leaf's dataHash is taken with, so
	// that a proof's hash cannot be tested against guessed values; kept
	// by the store, never shown. "" for actions recorded before it.
	DataSalt string
}

// OpenStep is an open step of a measurement, for filters and deadlines,
// and for the actionable list: its seats that an action can fill now and
// who fills the others (written with the measurement, not read back).
type OpenStep struct {
	MeasurementID string
	OrgID         string
	StepID        string
	Opening       int
	OpenedAt      Time
	DueAt         *Time
	// EscalateAt is when the step's next escalation is due (nil: none
	// left); Escalated counts those of this opening already emitted.
	EscalateAt *Time
	Escalated  int
	// Seats are the keys of the seats an action can fill now (for ordered
	// policies only the next one); none while the measurement is PENDING.
	// ProcessID is the measurement's process, kept with them.
	Seats     []SeatKey
	ProcessID string
	// Fillers are the users who fill a seat of this opening: none of them
	// may fill another.
	Fillers []string
}

// ListedMeasurement is a measurement of a list with the steps of its
// version (shared with other readers: read only).
type ListedMeasurement struct {
	Measurement
	Steps []Step
}

// MeasurementQuery filters and pages measurements.
type MeasurementQuery struct {
	Page          Page
	ProcessID     string
	Status        string
	OpenStepID    string
	Overdue       bool
	Now           Time // for Overdue
	CreatedFrom   *Time
	CreatedBefore *Time
	// Actionable keeps the measurements with an open step where the caller
	// could fill a seat now (the Service sets Filler). With it, OpenStepID
	// and Overdue apply to that step: the step waiting on the caller is
	// the one open, or the one past its deadline.
	Actionable bool
	Filler     Filler
	// Name keeps the measurements whose name starts with it (names are a
	// process code, upper case, and a number).
	Name string
}

// Filler is the caller of an actionable list as the store matches them
// against the open seats: the keys they hold (any one fills a seat that
// has it) and their id (a user who fills a seat of a step fills no other).
type Filler struct {
	UserID string
	Keys   []SeatKey
	// For are the users whose seats the caller fills by delegation, each
	// matched the same way; none of their For is followed.
	For []Filler
}

// Event is an outbox entry: written with the change that causes it.
type Event struct {
	ID            string
	OrgID         string
	Type          string
	MeasurementID string
	StepID        string
	ActionID      string
	Payload       []byte
	CreatedAt     Time
}
