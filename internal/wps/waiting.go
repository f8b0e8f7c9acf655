package wps

import (
	"slices"
)

// The messages about work (semantics §16).
const (
	KindWorkWaiting   = "work.waiting"   // a step starts waiting on the user
	KindWorkReturned  = "work.returned"  // a rejection or reproval superseded the user's action
	KindWorkEscalated = "work.escalated" // a step past its deadline is escalated to the holders of a policy
	KindWorkOverdue   = "work.overdue"   // a step waiting on the user passed its deadline
)

// mayAct tells whether the Inbox lists anything for p: it may act on a
// step (action:write or action:approve). (Reading measurements is checked
// before.)
func mayAct(p *Principal) bool { return p.Can(FnActionWrite) || p.Can(FnActionApprove) }

// fillerOf is whom the Inbox matches against open seats for user: the seat
// keys they hold through policies (heldKeys), their id, and the same of
// each user whose seats they fill by delegation (dels; not the seat of a
// step without policies, which they fill themselves).
func fillerOf(user User, policies []Policy, dels []delegator) Filler {
	f := Filler{UserID: user.ID}
	for _, k := range heldKeys(user.Roles, policies) {
		f.Keys = append(f.Keys, k.SeatKey)
	}
	for _, del := range dels {
		g := Filler{UserID: del.ID}
		for _, k := range heldKeys(del.Roles, del.policies) {
			if k.Policy != "" {
				g.Keys = append(g.Keys, k.SeatKey)
			}
		}
		if len(g.Keys) > 0 {
			f.For = append(f.For, g)
		}
	}
	return f
}

// listedFor tells whether the Inbox lists open step o for f: one of their
// keys fills one of its seats now, and they fill no seat of this opening
// yet. It is the rule of the actionable index (Tx.ListMeasurements with a
// Filler), worked out in memory.
func listedFor(o OpenStep, f Filler) bool {
	if slices.Contains(o.Fillers, f.UserID) {
		return false
	}
	for _, k := range f.Keys {
		if slices.Contains(o.Seats, k) {
			return true
		}
	}
	for _, g := range f.For {
		if listedFor(o, g) {
			return true
		}
	}
	return false
}

// mailWaiting queues work.waiting for each active user whom the Inbox
// starts listing an open step for: listed among after (the measurement's
// open steps as saved) and not in before for the same opening (a step
// that opens or re-opens, or whose next ordered seat becomes theirs). It
// runs in the change's transaction; nothing is read when mail is off or
// no step has a seat that was not fillable before. Each such change is
// also told the org's chat channels (chatWork), mail on or off.
func (s *Service) mailWaiting(tx Tx, m Measurement, proc Process, before, after []OpenStep) error {
	type change struct {
		now  OpenStep
		was  *OpenStep
		step *Step
	}
	var changes []change
	for _, o := range after {
		if len(o.Seats) == 0 {
			continue
		}
		var was *OpenStep
		for i := range before {
			if before[i].StepID == o.StepID && before[i].Opening == o.Opening {
				was = &before[i]
			}
		}
		if was != nil && slices.Equal(was.Seats, o.Seats) && slices.Equal(was.Fillers, o.Fillers) {
			continue // the same seats wait on the same people
		}
		if _, st := stepByID(proc.Steps, o.StepID); st != nil {
			changes = append(changes, change{o, was, st})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	chat := make([]chatMessage, len(changes))
	for i, c := range changes {
		chat[i] = chatMessage{c.now.StepID, chatText(KindWorkWaiting, m.Name, proc.Name, c.step.Label, c.now.DueAt, s.link("/measurements/"+m.ID))}
	}
	if err := s.chatWork(tx, m, KindWorkWaiting, chat...); err != nil {
		return err
	}
	if !s.mail.Enabled {
		return nil
	}
	list, err := activeHolders(tx, m.OrgID, s.Now())
	if err != nil {
		return err
	}
	for _, u := range list {
		for _, c := range changes {
			if !listedFor(c.now, u.filler) || c.was != nil && listedFor(*c.was, u.filler) {
				continue
			}
			facts := s.workFacts(m, proc, c.step.Label, c.now.DueAt)
			if err := s.queueMail(tx, m.OrgID, KindWorkWaiting, u.ID, u.Email, facts, At(s.Now().Add(notificationWindow))); err != nil {
				return err
			}
		}
	}
	return nil
}

// holder is an active user the Inbox may list work for, with whom it
// matches against open seats.
type holder struct {
	User
	filler Filler
}

// activeHolders lists the org's active users whom the Inbox may list work
// for (they read measurements and act: mayAct, or act by a delegation),
// each with their Filler, as ListMeasurements makes it for them; but not
// those who chose to be mailed a daily digest or nothing (PrefDaily,
// PrefOff).
func activeHolders(tx Tx, orgID string, now Time) ([]holder, error) {
	policies, err := tx.ListPolicies(orgID)
	if err != nil {
		return nil, err
	}
	prefs, err := tx.ListNotificationPrefs(orgID)
	if err != nil {
		return nil, err
	}
	delegations, err := tx.ListDelegations(orgID, "", now)
	if err != nil {
		return nil, err
	}
	var all []User
	for page := 1; ; page++ {
		users, total, err := tx.ListUsers(orgID, Page{Page: page, PerPage: 500})
		if err != nil {
			return nil, err
		}
		all = append(all, users...)
		if page*500 >= total {
			break
		}
	}
	byID := make(map[string]User, len(all))
	for _, u := range all {
		byID[u.ID] = u
	}
	var out []holder
	for _, u := range all {
		if u.Status != UserActive || prefs[u.ID] == PrefDaily || prefs[u.ID] == PrefOff {
			continue
		}
		p := &Principal{OrgID: orgID, UserID: u.ID, Roles: u.Roles, User: u}
		for _, pol := range policies {
			if Holds(u.Roles, pol) {
				p.Policies = append(p.Policies, pol)
			}
		}
		var dels []delegator
		for _, d := range delegations {
			if d.ToUserID != u.ID || !d.activeAt(now.Time) {
				continue
			}
			if del, ok := delegatorFrom(byID[d.FromUserID], d, policies); ok && (mayAct(p) || mayActFor(del)) {
				dels = append(dels, del)
			}
		}
		if p.Can(FnMeasurementRead) && (mayAct(p) || len(dels) > 0) {
			f := fillerOf(u, p.Policies, dels)
			if !mayAct(p) {
				f.Keys = nil // only delegated seats
			}
			out = append(out, holder{u, f})
		}
	}
	return out, nil
}

// mailOverdue queues work.overdue for each active user the Inbox lists the
// overdue opening o of m's step for (the users work.waiting told). holders
// keeps each org's active users for the pass, which claims up to 100
// openings at once.
func (s *Service) mailOverdue(tx Tx, m Measurement, proc Process, o OpenStep, holders map[string][]holder) error {
	var open *OpenStep
	for _, x := range openSteps(m, proc.Steps, engineDef(proc.Steps), nil) { // its seats: the deadline is o's
		if x.StepID == o.StepID && x.Opening == o.Opening {
			open = &x
		}
	}
	_, st := stepByID(proc.Steps, o.StepID)
	if open == nil || len(open.Seats) == 0 || st == nil {
		return nil
	}
	if err := s.chatWork(tx, m, KindWorkOverdue, chatMessage{o.StepID, chatText(KindWorkOverdue, m.Name, proc.Name, st.Label, open.DueAt, s.link("/measurements/"+m.ID))}); err != nil {
		return err
	}
	if !s.mail.Enabled {
		return nil
	}
	list, ok := holders[m.OrgID]
	if !ok {
		var err error
		if list, err = activeHolders(tx, m.OrgID, s.Now()); err != nil {
			return err
		}
		holders[m.OrgID] = list
	}
	for _, u := range list {
		if !listedFor(*open, u.filler) {
			continue
		}
		facts := s.workFacts(m, proc, st.Label, open.DueAt)
		if err := s.queueMail(tx, m.OrgID, KindWorkOverdue, u.ID, u.Email, facts, At(s.Now().Add(notificationWindow))); err != nil {
			return err
		}
	}
	return nil
}

// mailReturned queues work.returned for the authors of actions a rejection
// or reproval superseded (one message per author and step), but not for
// the actor, who did it, nor for users no longer active. It runs in the
// change's transaction, before the measurement's contended rows.
func (s *Service) mailReturned(tx Tx, m Measurement, proc Process, actorID string, superseded []Action) error {
	if len(superseded) == 0 {
		return nil
	}
	var chat []chatMessage // one per step
	for _, a := range superseded {
		if _, st := stepByID(proc.Steps, a.StepID); st != nil && !slices.ContainsFunc(chat, func(c chatMessage) bool { return c.stepID == a.StepID }) {
			chat = append(chat, chatMessage{a.StepID, chatText(KindWorkReturned, m.Name, proc.Name, st.Label, nil, s.link("/measurements/"+m.ID))})
		}
	}
	if err := s.chatWork(tx, m, KindWorkReturned, chat...); err != nil {
		return err
	}
	if !s.mail.Enabled {
		return nil
	}
	type key struct{ user, step string }
	done := map[key]bool{}
	users := map[string]*User{}
	for _, a := range superseded {
		k := key{a.UserID, a.StepID}
		if done[k] || a.UserID == actorID || a.UserID == SystemUserID {
			continue
		}
		done[k] = true
		u, ok := users[a.UserID]
		if !ok {
			got, err := tx.GetUser(m.OrgID, a.UserID)
			if err != nil && !IsCode(err, CodeNotFound) {
				return err
			}
			if err == nil {
				u = &got
			}
			users[a.UserID] = u
		}
		_, st := stepByID(proc.Steps, a.StepID)
		if u == nil || u.Status != UserActive || st == nil {
			continue
		}
		if pref, err := tx.GetNotificationPref(m.OrgID, u.ID); err != nil {
			return err
		} else if pref == PrefDaily || pref == PrefOff {
			continue
		}
		facts := s.workFacts(m, proc, st.Label, nil)
		if err := s.queueMail(tx, m.OrgID, KindWorkReturned, u.ID, u.Email, facts, At(s.Now().Add(notificationWindow))); err != nil {
			return err
		}
	}
	return nil
}

// mailEscalated queues work.escalated for the recipients of an escalation
// (the active holders of its policy), in the scheduler's transaction that
// emits step.escalated, so each escalation is mailed once.
func (s *Service) mailEscalated(tx Tx, m Measurement, proc Process, e Escalated, to []User) error {
	_, st := stepByID(proc.Steps, e.StepID)
	if st == nil {
		return nil
	}
	due := e.DueAt
	if err := s.chatWork(tx, m, KindWorkEscalated, chatMessage{e.StepID, chatText(KindWorkEscalated, m.Name, proc.Name, st.Label, &due, s.link("/measurements/"+m.ID))}); err != nil {
		return err
	}
	if !s.mail.Enabled {
		return nil
	}
	for _, u := range to {
		facts := s.workFacts(m, proc, st.Label, &due)
		facts.Policy, facts.After = OneLine(e.Escalation.PolicyName, 100), OneLine(e.Escalation.After, 40)
		if err := s.queueMail(tx, m.OrgID, KindWorkEscalated, u.ID, u.Email, facts, At(s.Now().Add(notificationWindow))); err != nil {
			return err
		}
	}
	return nil
}
