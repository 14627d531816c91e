package wireguard

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"golang.org/x/crypto/curve25519"
)

// Key is a Curve25519 key as WireGuard's configuration protocol writes it
// (hex).
type Key [32]byte

func (k Key) Hex() string { return hex.EncodeToString(k[:]) }

// NewPrivateKey is a fresh clamped private key.
func NewPrivateKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return k, fmt.Errorf("wireguard key: %w", err)
	}
	k[0] &= 248
	k[31] = (k[31] & 127) | 64
	return k, nil
}

// Public is the private key's public key.
func (k Key) Public() (Key, error) {
	var p Key
	out, err := curve25519.X25519(k[:], curve25519.Basepoint)
	if err != nil {
		return p, fmt.Errorf("wireguard public key: %w", err)
	}
	copy(p[:], out)
	return p, nil
}
