package httpapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity/client"
)

// Identity is identity's client answering in box's codes and words; it
// implements box.Identity.
type Identity struct{ *client.Client }

// AccountName implements box.Identity.
func (i Identity) AccountName(ctx context.Context, token, accountID string) (string, error) {
	a, err := i.Account(ctx, token, accountID)
	return a.Name, err
}

// NewIdentity returns identity's client answering in box's codes and
// words. An empty baseURL makes every check answer unavailable.
func NewIdentity(baseURL string, timeout time.Duration, logger *slog.Logger) Identity {
	return Identity{client.New(client.Options{
		BaseURL: baseURL,
		Timeout: timeout,
		Logger:  logger,
		Errors: client.Errors{
			Unauthenticated: errs.New(box.CodeUnauthenticated, box.MsgUnauthenticated),
			Forbidden:       errs.New(box.CodeForbidden, box.MsgForbidden),
			NotFound:        errs.New(box.CodeNotFound, box.MsgNotFound),
			Unavailable:     errs.New(box.CodeUnavailable, box.MsgUnavailable),
		},
	})}
}

var _ box.Identity = Identity{}
