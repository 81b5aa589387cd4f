package oidc_test

import "encoding/base64"

func base64URL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
