package darkroom

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultVariants is DARKROOM_VARIANTS' default (darkroom.md section 3).
const DefaultVariants = "thumb=128x128:cover,card=480x270:cover,large=1600x1600:fit"

// Preset modes: cover crops to exactly the size, fit scales within it.
const (
	ModeCover = "cover"
	ModeFit   = "fit"
)

// Preset is a named variant size.
type Preset struct {
	Name          string
	Width, Height int
	Mode          string
}

var presetName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// ParsePresets reads DARKROOM_VARIANTS: name=WxH:cover|fit, comma
// separated. Errors name the entry at fault.
func ParsePresets(s string) (map[string]Preset, error) {
	out := map[string]Preset{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		name, spec, ok := strings.Cut(entry, "=")
		size, mode, ok2 := strings.Cut(spec, ":")
		ws, hs, ok3 := strings.Cut(size, "x")
		w, errW := strconv.Atoi(ws)
		h, errH := strconv.Atoi(hs)
		switch {
		case !ok || !ok2 || !ok3 || errW != nil || errH != nil:
			return nil, fmt.Errorf("%q is not name=WIDTHxHEIGHT:cover|fit", entry)
		case !presetName.MatchString(name):
			return nil, fmt.Errorf("%q: a name is lower-case letters, digits, - and _", entry)
		case w < 1 || h < 1 || w > 4096 || h > 4096:
			return nil, fmt.Errorf("%q: sizes are 1 to 4096 pixels", entry)
		case mode != ModeCover && mode != ModeFit:
			return nil, fmt.Errorf("%q: the mode is cover or fit", entry)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%q: %s is named twice", entry, name)
		}
		out[name] = Preset{Name: name, Width: w, Height: h, Mode: mode}
	}
	return out, nil
}

// MaxLinkTTL bounds a signed link's life (darkroom.md section 3).
const MaxLinkTTL = 7 * 24 * time.Hour

// linkSig signs media id until exp with key.
func linkSig(key []byte, id string, exp int64) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "darkroom-link\n%s\n%d", strings.ToLower(id), exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Link is a signed link's query: ?exp=EXP&sig=SIG.
type Link struct {
	Exp int64
	Sig string
}

// validLink reports whether l opens media id at now.
func validLink(key []byte, id string, l Link, now time.Time) bool {
	if l.Sig == "" || l.Exp < now.Unix() || l.Exp > now.Add(MaxLinkTTL+time.Minute).Unix() || len(key) == 0 {
		return false
	}
	return hmac.Equal([]byte(linkSig(key, id, l.Exp)), []byte(l.Sig))
}
