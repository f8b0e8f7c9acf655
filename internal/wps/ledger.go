package wps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// ledgerBody is the canonical JSON of an action: what its ledger hash covers.
// Field order is fixed by the struct; map keys are sorted by encoding/json.
type ledgerBody struct {
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

// LedgerHash is SHA-256 over the previous link's hash and the action's
// canonical JSON. clientHash is the transactionHash the client sent ("" if none).
func LedgerHash(prev string, a Action, clientHash string) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(ledgerJSON(a, clientHash))
	return hex.EncodeToString(h.Sum(nil))
}

// LedgerParts is the action's canonical JSON before and after its seq, for a
// store that links actions inside the database: LedgerHash(prev, a, c) is
// SHA-256 over prev, before, the seq in decimal and after.
func LedgerParts(a Action, clientHash string) (before, after []byte) {
	a.Seq = 0
	body := ledgerJSON(a, clientHash)
	// "seq" follows "id" and "orgId", whose quotes inside are escaped.
	before, after, ok := bytes.Cut(body, []byte(`,"seq":0,`))
	if !ok {
		panic("ledger body without seq")
	}
	return append(before[:len(before):len(before)], `,"seq":`...), append([]byte(","), after...)
}

func ledgerJSON(a Action, clientHash string) []byte {
	roles := a.UserRoles
	if roles == nil {
		roles = []string{}
	}
	data := a.Data
	if data == nil {
		data = map[string]any{}
	}
	body, err := json.Marshal(ledgerBody{ID: a.ID, OrgID: a.OrgID, Seq: a.Seq, MeasurementID: a.MeasurementID, StepID: a.StepID,
		Opening: a.Opening, Type: a.Type, UserID: a.UserID, Username: a.Username, UserRoles: roles, Role: a.Role,
		PolicyName: a.PolicyName, TokenID: a.TokenID, Observation: a.Observation, ClientHash: clientHash,
		ReprovesActionID: a.ReprovesActionID, Data: data, CreatedAt: a.CreatedAt.Millis()})
	if err != nil {
		panic(err) // plain values only
	}
	return body
}

// LedgerReport is the answer of a ledger verification.
type LedgerReport struct {
	OK      bool          `json:"ok"`
	Checked int64         `json:"checked" doc:"Actions whose link was checked"`
	Head    string        `json:"head" doc:"The last link's hash"`
	Broken  *LedgerBreach `json:"broken,omitempty" doc:"The first broken link"`
}

// LedgerBreach says where the chain breaks and why.
type LedgerBreach struct {
	Seq      int64  `json:"seq"`
	ActionID string `json:"actionId,omitempty"`
	Reason   string `json:"reason"`
}

// VerifyLedger re-walks the org's chain and reports the first broken link:
// an edited row, a removed or inserted one, or a head that does not match.
func (s *Service) VerifyLedger(ctx context.Context, p *Principal) (LedgerReport, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return LedgerReport{}, err
	}
	rep := LedgerReport{OK: true}
	var prev string
	var seq int64
	breach := func(at int64, id, format string, args ...any) {
		rep.OK = false
		rep.Broken = &LedgerBreach{Seq: at, ActionID: id, Reason: fmt.Sprintf(format, args...)}
	}
	for {
		var page []Action
		err := s.store.Read(ctx, func(tx Tx) (err error) {
			page, err = tx.ListLedger(p.OrgID, seq, 1000)
			return err
		})
		if err != nil {
			return rep, err
		}
		for _, a := range page {
			client := a.TransactionHash
			if client == a.LedgerHash {
				client = ""
			}
			switch {
			case a.Seq != seq+1:
				breach(seq+1, a.ID, "link %d is missing", seq+1)
			case a.PrevHash != prev:
				breach(a.Seq, a.ID, "the link does not point to the previous one")
			case LedgerHash(prev, a, client) != a.LedgerHash:
				breach(a.Seq, a.ID, "the action's content does not match its hash")
			}
			if !rep.OK {
				return rep, nil
			}
			prev, seq = a.LedgerHash, a.Seq
			rep.Checked++
		}
		if len(page) < 1000 {
			break
		}
	}
	var headSeq int64
	var headHash string
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		headSeq, headHash, err = tx.LedgerHead(p.OrgID)
		return err
	})
	if err != nil {
		return rep, err
	}
	if headSeq != seq || headHash != prev {
		breach(headSeq, "", "the chain ends at %d but the head says %d", seq, headSeq)
	}
	rep.Head = prev
	return rep, nil
}
