package identity

import "crypto/ed25519"

// Signer returns the current signing key and its id, for signers other
// than the session tokens' (the OpenID Provider's ID tokens), so every
// token identity issues is signed by the same rotating key set.
func (r *KeyRing) Signer() (kid string, key ed25519.PrivateKey) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.signerKID, r.signer
}

// PublicKeys returns the published keys by id, newest first in order.
func (r *KeyRing) PublicKeys() (order []string, keys map[string]ed25519.PublicKey) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys = make(map[string]ed25519.PublicKey, len(r.public))
	for k, v := range r.public {
		keys[k] = v
	}
	return append([]string(nil), r.order...), keys
}
