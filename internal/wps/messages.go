package wps

import "encoding/json"

// MailFacts is what a message of the outbox is about: the domain writes
// it (as JSON, in the message's body while it is pending) and
// internal/notify words it, subject and text, in the recipient's language
// and time zone when it sends it. It names the org, measurement, process
// and step (as they were when the message was written) and links to the
// console; it carries no parameter value (semantics §9 holds in inboxes).
type MailFacts struct {
	// Locale is the language for a recipient who is not a user yet (an
	// invitation: the inviter's); a user's own setting comes first.
	Locale string `json:"locale,omitempty"`
	// TimeZone is the zone for a recipient who is not a user yet.
	TimeZone      string     `json:"timeZone,omitempty"`
	Org           string     `json:"org,omitempty"`
	Inviter       string     `json:"inviter,omitempty"`
	Link          string     `json:"link,omitempty"` // the console page the message is about
	MeasurementID string     `json:"measurementId,omitempty"`
	Measurement   string     `json:"measurement,omitempty"` // "" while PostgreSQL has not numbered it
	Process       string     `json:"process,omitempty"`
	Step          string     `json:"step,omitempty"`
	DueAt         *Time      `json:"dueAt,omitempty"`
	Policy        string     `json:"policy,omitempty"` // work.escalated: the policy escalated to
	After         string     `json:"after,omitempty"`  // work.escalated: how long past the deadline (ISO 8601)
	Items         []MailItem `json:"items,omitempty"`  // work.digest: the first measurements waiting
	Total         int        `json:"total,omitempty"`  // work.digest: how many wait
}

// MailItem is a measurement a digest lists.
type MailItem struct {
	Name string `json:"name"`
	Link string `json:"link"`
}

// ParseMailFacts reads a pending message's body.
func ParseMailFacts(body string) (MailFacts, error) {
	var f MailFacts
	err := json.Unmarshal([]byte(body), &f)
	return f, err
}

// workFacts are the facts of a work.* message about step of m.
func (s *Service) workFacts(m Measurement, proc Process, step string, due *Time) MailFacts {
	return MailFacts{Link: s.link("/measurements/" + m.ID), MeasurementID: m.ID, Measurement: OneLine(m.Name, 100),
		Process: OneLine(proc.Name, 100), Step: OneLine(step, 100), DueAt: due}
}
