package engine

import (
	"slices"
	"testing"
	"time"
)

// A delegate fills a delegator's seat only when they have none of their
// own to fill, and a seat filled on someone's behalf is theirs too.
func TestSeatsOfDelegation(t *testing.T) {
	def := Def{Steps: []StepDef{{ID: "sign", Policies: []string{"Approver", "Quality"}, Tokens: []string{"t1", "t2"}}}}
	s, _ := Start(def, time.Unix(0, 0), false)
	sd, st := &def.Steps[0], s.Steps["sign"]
	bruno := Proxy{UserID: "bruno", Holds: []string{"Approver", "Quality"}}

	if seats, who := SeatsOf(sd, st, "ana", []string{"Quality"}, []Proxy{bruno}); !slices.Equal(seats, []string{"Quality"}) || who != "" {
		t.Fatalf("own seats first: %v for %q", seats, who)
	}
	if seats, who := SeatsOf(sd, st, "ana", nil, []Proxy{bruno}); !slices.Equal(seats, []string{"Approver", "Quality"}) || who != "bruno" {
		t.Fatalf("the delegator's seats: %v for %q", seats, who)
	}

	res, err := Apply(def, s, Action{ID: "a1", Type: Approval, StepID: "sign", UserID: "ana", Proxies: []Proxy{bruno}, Now: time.Unix(1, 0)})
	if err != nil || res.Seat != "Approver" || res.OnBehalfOf != "bruno" {
		t.Fatalf("apply: %+v %v", res, err)
	}
	st = res.State.Steps["sign"]
	if FilledBy(st, "bruno") != "Approver" || FilledBy(st, "ana") != "Approver" || !slices.Equal(Fillers(sd, st), []string{"ana", "bruno"}) {
		t.Fatalf("the seat is both's: %+v", st.Seats)
	}
	for _, who := range []string{"ana", "bruno"} {
		holds := []string{"Quality"}
		if _, err := Apply(def, res.State, Action{ID: "a2", Type: Approval, StepID: "sign", UserID: who, Holds: holds, Now: time.Unix(2, 0)}); err == nil {
			t.Fatalf("%s filled a second seat", who)
		}
	}
	// Carl, another delegate of Bruno's, finds his seat taken too.
	if seats, _ := SeatsOf(sd, st, "carl", nil, []Proxy{bruno}); len(seats) != 0 {
		t.Fatalf("carl may fill %v for bruno", seats)
	}
	if _, err := Apply(def, res.State, Action{ID: "a3", Type: Approval, StepID: "sign", UserID: "carl", Proxies: []Proxy{bruno}, Now: time.Unix(3, 0)}); err == nil {
		t.Fatal("carl filled a second seat for bruno")
	}
}
