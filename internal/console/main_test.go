package console_test

import (
	"testing"

	tu "wps/internal/testutil"
)

func TestMain(m *testing.M) { tu.Main(m) }
