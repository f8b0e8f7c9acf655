package wps

import "fmt"

// The texts of the messages, in one place (English until section 21 adds
// the recipient's language). Names in them are put on one line (OneLine):
// a name cannot add a header or a line of its own. They carry no
// parameter value.

func inviteMessage(orgName, inviter, link string) (subject, body string) {
	org := OneLine(orgName, 100)
	subject = fmt.Sprintf("You are invited to %s on wps", org)
	body = fmt.Sprintf("%s invites you to join %s on wps.\n\nAccept the invitation and choose your password here:\n%s\n\n"+
		"If you did not expect this, ignore this message.\n", OneLine(inviter, 100), org, link)
	return subject, body
}

func resetMessage(orgName, link string) (subject, body string) {
	org := OneLine(orgName, 100)
	subject = fmt.Sprintf("Reset your wps password for %s", org)
	body = fmt.Sprintf("Someone asked to reset your password for %s on wps.\n\nChoose a new password here (the link works once, for one hour):\n%s\n\n"+
		"If it was not you, ignore this message: your password stays as it is.\n", org, link)
	return subject, body
}

func waitingMessage(measurement, process, step string, due *Time, link string) (subject, body string) {
	what := OneLine(measurement, 100)
	if what == "" {
		what = "a new measurement" // its number is given at commit (PostgreSQL)
	}
	subject = fmt.Sprintf("Waiting for you: %s of %s", OneLine(step, 100), what)
	dueText := "It has no deadline."
	if due != nil {
		dueText = "It is due " + due.UTC().Format("2006-01-02 15:04 UTC") + "."
	}
	body = fmt.Sprintf("The step \"%s\" of %s (process %s) waits for you.\n%s\n\nOpen it here:\n%s\n",
		OneLine(step, 100), what, OneLine(process, 100), dueText, link)
	return subject, body
}

func returnedMessage(measurement, process, step, link string) (subject, body string) {
	subject = fmt.Sprintf("Returned: %s of %s", OneLine(step, 100), OneLine(measurement, 100))
	body = fmt.Sprintf("What you did on the step \"%s\" of %s (process %s) was rejected or reproved: the step is open again.\n\nSee why, and do it again, here:\n%s\n",
		OneLine(step, 100), OneLine(measurement, 100), OneLine(process, 100), link)
	return subject, body
}

func overdueMessage(measurement, process, step string, due *Time, link string) (subject, body string) {
	subject = fmt.Sprintf("Overdue: %s of %s", OneLine(step, 100), OneLine(measurement, 100))
	dueText := ""
	if due != nil {
		dueText = " It was due " + due.UTC().Format("2006-01-02 15:04 UTC") + "."
	}
	body = fmt.Sprintf("The step \"%s\" of %s (process %s) waits for you and is past its deadline.%s\n\nOpen it here:\n%s\n",
		OneLine(step, 100), OneLine(measurement, 100), OneLine(process, 100), dueText, link)
	return subject, body
}

func escalatedMessage(measurement, process, step, policy string, due *Time, after string, link string) (subject, body string) {
	subject = fmt.Sprintf("Escalated: %s of %s", OneLine(step, 100), OneLine(measurement, 100))
	dueText := ""
	if due != nil {
		dueText = " It was due " + due.UTC().Format("2006-01-02 15:04 UTC") + "; it is " + OneLine(after, 40) + " past it."
	}
	body = fmt.Sprintf("The step \"%s\" of %s (process %s) is still waiting past its deadline, and is escalated to you as a holder of %s.%s\n\nOpen it here:\n%s\n",
		OneLine(step, 100), OneLine(measurement, 100), OneLine(process, 100), OneLine(policy, 100), dueText, link)
	return subject, body
}
