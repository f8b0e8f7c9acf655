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

// Action is one recorded act on a measurement, a link of the org's ledger.
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
	PrevHash         string
	LedgerHash       string
	CreatedAt        Time
}

// OpenStep is an open step of a measurement, for filters and deadlines.
type OpenStep struct {
	MeasurementID string
	OrgID         string
	StepID        string
	Opening       int
	OpenedAt      Time
	DueAt         *Time
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
	// Actionable keeps the measurements with a seat the caller can fill now
	// (the Inbox).
	Actionable bool
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
