package identity

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// Courier's templates that identity's flows send (courier.md section 2).
const (
	TemplateVerifyEmail        = "verify_email"
	TemplatePasswordReset      = "password_reset"
	TemplateEmailChangeConfirm = "email_change_confirm"
	TemplateEmailChangedNotice = "email_changed_notice"
	TemplateInvitation         = "invitation"
	TemplateMFAEnabledNotice   = "mfa_enabled_notice"
	// TemplatePasswordChangedNotice tells the user's address that the
	// password was changed or reset (no data): a takeover does not pass
	// unseen.
	TemplatePasswordChangedNotice = "password_changed_notice"
)

// OutgoingMail is a request to courier as identity's mail outbox keeps it:
// the template data carries one-time links, so it is stored only sealed
// (with a key derived from IDENTITY_MASTER_KEY, the row's id as associated
// data) and erased once courier has taken the request.
type OutgoingMail struct {
	ID        string
	Template  string
	To        string
	Sealed    []byte
	CreatedAt time.Time
	Attempts  int
	// Limits bound mail sent on a caller's behalf: the store queues the
	// mail only while every limit holds, counting the request against
	// each in the same transaction. Not stored with the mail.
	Limits []MailLimit
}

// MailLimit is at most Max mails under Key (a recipient address or a
// sender, and the kind of mail) in each Window.
type MailLimit struct {
	Key    string
	Max    int
	Window time.Duration
}

// Defaults of the mail limits (Options).
const (
	DefaultMailPerAddress = 3
	DefaultMailPerUser    = 30
	DefaultMailWindow     = time.Hour
)

// limited returns m bounded per recipient address and, when userID is not
// empty, per user causing it, both counted per kind of mail.
func (s *Service) limited(m OutgoingMail, userID string) OutgoingMail {
	m.Limits = []MailLimit{{Key: m.Template + " to " + m.To, Max: s.opts.MailPerAddress, Window: s.opts.MailWindow}}
	if userID != "" {
		m.Limits = append(m.Limits, MailLimit{Key: m.Template + " by " + userID, Max: s.opts.MailPerUser, Window: s.opts.MailWindow})
	}
	return m
}

// MailSealer seals and opens the template data of outgoing mail.
type MailSealer struct{ aead cipher.AEAD }

// NewMailSealer derives the mail key from the master key, so a leaked mail
// row cannot be opened with the signing keys' sealing key and vice versa.
func NewMailSealer(master []byte) (*MailSealer, error) {
	if len(master) != 32 {
		return nil, errors.New("the master key must be 32 bytes")
	}
	key := sha256.Sum256(append([]byte("identity mail outbox v1\x00"), master...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &MailSealer{aead: aead}, nil
}

// Mail builds an outgoing mail with a fresh id and data sealed to it.
func (m *MailSealer) Mail(template, to string, data map[string]string) (OutgoingMail, error) {
	id := uuid.NewString()
	plain, err := json.Marshal(data)
	if err != nil {
		return OutgoingMail{}, err
	}
	nonce := make([]byte, m.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return OutgoingMail{}, err
	}
	return OutgoingMail{ID: id, Template: template, To: to, Sealed: m.aead.Seal(nonce, nonce, plain, []byte(id))}, nil
}

// Open returns the template data of mail.
func (m *MailSealer) Open(mail OutgoingMail) (map[string]string, error) {
	n := m.aead.NonceSize()
	if len(mail.Sealed) < n {
		return nil, fmt.Errorf("mail %s: sealed data too short", mail.ID)
	}
	plain, err := m.aead.Open(nil, mail.Sealed[:n], mail.Sealed[n:], []byte(mail.ID))
	if err != nil {
		return nil, fmt.Errorf("mail %s: %w", mail.ID, err)
	}
	var data map[string]string
	if err := json.Unmarshal(plain, &data); err != nil {
		return nil, fmt.Errorf("mail %s: %w", mail.ID, err)
	}
	return data, nil
}

// link is a page of the web app carrying a one-time token.
func (s *Service) link(path, token string) string {
	return s.opts.PublicURL + path + "?token=" + url.QueryEscape(token)
}
