package wps

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Password hashing: argon2id with the parameters OWASP recommends (19 MiB
// of memory, 2 passes, 1 lane), a 16-byte salt and a 32-byte key, stored
// in the PHC string form so that parameters can change later.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32

	MinPasswordLength = 12
	MaxPasswordLength = 1024
)

// hasher bounds how many hashes run at once: each takes 19 MiB, so a burst
// of sign-ins must queue rather than take the memory of the server.
type hasher struct{ slots chan struct{} }

func newHasher(n int) *hasher {
	if n <= 0 {
		n = 4
	}
	return &hasher{slots: make(chan struct{}, n)}
}

func (h *hasher) key(ctx context.Context, password string, salt []byte, mem uint32, t uint32, threads uint8) ([]byte, error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.slots }()
	return argon2.IDKey([]byte(password), salt, t, mem, threads, argonKeyLen), nil
}

// hash returns the PHC string of a new hash of password.
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key, err := h.key(ctx, password, salt, argonMemory, argonTime, argonThreads)
	if err != nil {
		return "", err
	}
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// dummyHash is verified against when there is no user or no password, so
// that an unknown email costs the same time as a wrong password.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Vv3m3aUQ1fNkEbuOaSWd5QrK8IMdTfb1lPyN7KuUeJ4"

// verify reports whether password matches encoded (a PHC argon2id
// string); a malformed one matches nothing, in the same time.
func (h *hasher) verify(ctx context.Context, password, encoded string) (bool, error) {
	ok := true
	if encoded == "" {
		encoded, ok = dummyHash, false
	}
	var mem, t uint32
	var threads uint8
	var version int
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		parts, ok = strings.Split(dummyHash, "$"), false
	}
	_, err1 := fmt.Sscanf(parts[2], "v=%d", &version)
	_, err2 := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &threads)
	salt, err3 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err4 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || mem > 1<<20 || t > 10 || threads == 0 {
		return false, nil
	}
	got, err := h.key(ctx, password, salt, mem, t, threads)
	if err != nil {
		return false, err
	}
	return ok && subtle.ConstantTimeCompare(got, want) == 1, nil
}

// checkPassword reports a password that is too short or too long.
func checkPassword(v *Validator, field, password string) {
	n := utf8.RuneCountInString(password)
	v.Check(n >= MinPasswordLength && len(password) <= MaxPasswordLength && utf8.ValidString(password), field,
		"must be %d to %d characters", MinPasswordLength, MaxPasswordLength)
}
