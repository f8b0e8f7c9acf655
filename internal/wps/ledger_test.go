package wps

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
)

// A store that links actions itself hashes LedgerParts around the seq: the
// same hash as LedgerHash, whatever the action's strings hold.
func TestLedgerParts(t *testing.T) {
	for _, a := range []Action{
		{ID: "a1", OrgID: "o1", Seq: 1, Type: "WRITE_DATA"},
		{ID: `x,"seq":0,"`, OrgID: `o,"seq":0,`, Seq: 9_007_199_254_740_993, Observation: `,"seq":0,`,
			UserRoles: []string{"INSPECTOR"}, Data: map[string]any{"seq": 0, "b": "<&>"}, CreatedAt: FromMillis(1_700_000_000_123)},
	} {
		for _, client := range []string{"", "0xabc"} {
			before, after := LedgerParts(a, client)
			h := sha256.New()
			h.Write([]byte("prev"))
			h.Write(before)
			h.Write([]byte(strconv.FormatInt(a.Seq, 10)))
			h.Write(after)
			if got, want := hex.EncodeToString(h.Sum(nil)), LedgerHash("prev", a, client); got != want {
				t.Errorf("action %q: parts hash to %s, LedgerHash is %s", a.ID, got, want)
			}
		}
	}
}
