// Package config reads a service's settings from an injected environment
// lookup into a struct whose tags say everything about each setting: the
// variable, its default and whether it is required (go-envconfig's `env`
// tag), and the rule its value must follow (the `rule` tag). A service
// refuses to start on the first problem, with one line naming the variable
// and the rule.
//
//	type Config struct {
//		Port    int           `env:"PORT, default=8080" rule:"port"`
//		Timeout time.Duration `env:"DATABASE_TIMEOUT, default=5s" rule:"positive"`
//		Issuer  string        `env:"IDENTITY_ISSUER" rule:"url"`
//		Key     config.Key    `env:"IDENTITY_MASTER_KEY" rule:"key32"`
//		Level   slog.Level    `env:"LOG_LEVEL, default=info" rule:"oneof=debug info warn error"`
//	}
package config

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// Validator is a configuration with rules that span fields (a variable
// required only when another is set). Load calls Validate after every
// field has passed its own rule.
type Validator interface {
	Validate() error
}

// Load fills cfg, a pointer to a struct, from getenv by its fields' `env`
// and `rule` tags, then calls its Validate method if it has one. A blank
// variable counts as unset. The error is one line that begins with the
// variable's name; it never echoes the value of a `key32` variable.
//
// Rules: positive (a number or duration above 0), nonnegative, port (0 to
// 65535), url (an absolute http or https URL), loopback (a host:port on a
// loopback address), key32 (the base64 encoding of 32 bytes), and
// oneof=A B C (one of the words).
func Load(ctx context.Context, getenv func(string) string, cfg any) error {
	lookup := envconfig.LookuperFunc(func(key string) (string, bool) {
		v := strings.TrimSpace(getenv(key))
		return v, v != ""
	})
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: Load needs a pointer to a struct, got %T", cfg)
	}
	vars := map[string]string{} // field name → variable, to name decoding failures
	if err := checkRules(v.Elem().Type(), lookup, vars); err != nil {
		return err
	}
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: cfg, Lookuper: lookup}); err != nil {
		return describe(err, vars)
	}
	if c, ok := cfg.(Validator); ok {
		return c.Validate()
	}
	return nil
}

// checkRules applies each field's rule to its raw value (or default), so a
// failure can say the rule instead of a parser's message.
func checkRules(t reflect.Type, lookup envconfig.Lookuper, vars map[string]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("env")
		if !ok {
			if f.Type.Kind() == reflect.Struct {
				if err := checkRules(f.Type, lookup, vars); err != nil {
					return err
				}
			}
			continue
		}
		name, def, _ := strings.Cut(tag, ",")
		name = strings.TrimSpace(name)
		vars[f.Name] = name
		val, found := lookup.Lookup(name)
		if !found {
			if _, d, ok := strings.Cut(def, "default="); ok {
				val = d
			}
		}
		rule := f.Tag.Get("rule")
		if val == "" || rule == "" {
			continue
		}
		if err := check(rule, val, f.Type); err != nil {
			return fmt.Errorf("%s: %s", name, err.Error())
		}
	}
	return nil
}

var durationType = reflect.TypeFor[time.Duration]()

func check(rule, val string, t reflect.Type) error {
	shown := fmt.Sprintf(", got %q", val)
	switch {
	case rule == "positive" || rule == "nonnegative":
		min, words := int64(1), "a positive"
		if rule == "nonnegative" {
			min, words = 0, "a zero or positive"
		}
		if t == durationType {
			d, err := time.ParseDuration(val)
			if err != nil || int64(d) < min {
				return errors.New("must be " + words + " Go duration such as 5s" + shown)
			}
			return nil
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < min {
			return errors.New("must be " + words + " whole number" + shown)
		}
	case rule == "port":
		if n, err := strconv.Atoi(val); err != nil || n < 0 || n > 65535 {
			return errors.New("must be a port number from 0 to 65535" + shown)
		}
	case rule == "url":
		if u, err := url.Parse(val); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("must be an absolute http(s) URL such as https://id.example.com" + shown)
		}
	case rule == "loopback":
		host, port, err := net.SplitHostPort(val)
		ip := net.ParseIP(host)
		_, perr := strconv.Atoi(port)
		if err != nil || perr != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			return errors.New("must be a loopback host:port such as 127.0.0.1:6060" + shown)
		}
	case rule == "key32":
		if _, err := decodeKey(val); err != nil {
			return err // never the value: it is a secret
		}
	case strings.HasPrefix(rule, "oneof="):
		words := strings.Fields(strings.TrimPrefix(rule, "oneof="))
		for _, w := range words {
			if val == w {
				return nil
			}
		}
		return errors.New("must be one of " + strings.Join(words, ", ") + shown)
	default:
		return fmt.Errorf("unknown rule %q", rule)
	}
	return nil
}

// describe turns a decoding failure of a field without a rule into one line
// naming its variable.
func describe(err error, vars map[string]string) error {
	msg := err.Error()
	if errors.Is(err, envconfig.ErrMissingRequired) {
		_, name, _ := strings.Cut(msg, envconfig.ErrMissingRequired.Error()+": ")
		return fmt.Errorf("%s: is required", name)
	}
	field, rest, ok := strings.Cut(msg, ": ")
	if name, known := vars[field]; ok && known {
		return fmt.Errorf("%s: cannot be read: %s", name, strings.ReplaceAll(rest, "\n", " "))
	}
	return fmt.Errorf("config: %s", strings.ReplaceAll(msg, "\n", " "))
}

// Key is a 32-byte secret read from its base64 encoding (standard or URL
// alphabet, padded or not).
type Key []byte

// EnvDecode implements envconfig.DecoderCtx.
func (k *Key) EnvDecode(_ context.Context, val string) error {
	if val == "" {
		*k = nil // unset
		return nil
	}
	b, err := decodeKey(val)
	*k = b
	return err
}

func decodeKey(v string) (Key, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			if len(b) == 32 {
				return b, nil
			}
			break
		}
	}
	return nil, errors.New("must be the base64 encoding of exactly 32 bytes")
}
