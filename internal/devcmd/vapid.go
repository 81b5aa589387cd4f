package devcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/platformco/platform/internal/courier/push"
)

// courierVAPIDFile holds courier's VAPID key pair inside the data dir:
// made on the first start and kept, so browsers' push subscriptions
// (bound to the public key) survive restarts.
const courierVAPIDFile = "courier-vapid.json"

// devVAPIDSubject is the quick start's VAPID contact.
const devVAPIDSubject = "mailto:push@platform.localhost"

type vapidFile struct {
	PublicKey  string `json:"public_key"`
	PrivateKey string `json:"private_key"`
}

// loadOrCreateVAPID returns the pair kept at path, making it (0600) on the
// first call. A file that does not hold a valid pair is refused, never
// replaced: the browsers subscribed with its key.
func loadOrCreateVAPID(path string) (push.VAPID, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		var f vapidFile
		if err := json.Unmarshal(b, &f); err != nil {
			return push.VAPID{}, fmt.Errorf("%s: not a VAPID key pair; restore it or move it aside", path)
		}
		v, err := push.ParseVAPID(f.PublicKey, f.PrivateKey, devVAPIDSubject)
		if err != nil {
			return push.VAPID{}, fmt.Errorf("%s: %v; restore it or move it aside", path, err)
		}
		return v, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return push.VAPID{}, err
	}
	v, err := push.GenerateVAPID(devVAPIDSubject)
	if err != nil {
		return push.VAPID{}, err
	}
	out, err := json.Marshal(vapidFile{PublicKey: v.PublicKey, PrivateKey: v.PrivateKey})
	if err != nil {
		return push.VAPID{}, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return push.VAPID{}, fmt.Errorf("create VAPID key pair: %w", err)
	}
	if _, err := f.Write(append(out, '\n')); err != nil {
		f.Close()
		return push.VAPID{}, err
	}
	return v, f.Close()
}

// withVAPID adds courier's COURIER_VAPID_* variables for v to vars.
func withVAPID(v push.VAPID, vars map[string]string) map[string]string {
	vars["COURIER_VAPID_PUBLIC_KEY"] = v.PublicKey
	vars["COURIER_VAPID_PRIVATE_KEY"] = v.PrivateKey
	vars["COURIER_VAPID_SUBJECT"] = v.Subject
	return vars
}
