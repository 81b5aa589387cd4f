-- +goose Up
-- One row per send request. data_sealed holds the template data (one-time
-- links) sealed with COURIER_SECRET_BOX_KEY, only while the message may
-- still be sent: the CHECK makes erasing it part of every final status.
CREATE TABLE emails (
    id              TEXT PRIMARY KEY,
    template        TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    locale          TEXT NOT NULL,
    requested_by    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('queued', 'delivered', 'bounced', 'failed', 'suppressed')),
    data_sealed     BLOB,
    attempts        INTEGER NOT NULL DEFAULT 0,
    attempt_id      TEXT,
    next_attempt_at TIMESTAMP NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    CONSTRAINT emails_data_only_while_queued CHECK (status = 'queued' OR data_sealed IS NULL),
    CONSTRAINT emails_queued_has_data CHECK (status <> 'queued' OR data_sealed IS NOT NULL)
);
CREATE INDEX emails_due ON emails (next_attempt_at) WHERE status = 'queued';

-- +goose StatementBegin
CREATE TRIGGER emails_final_status BEFORE UPDATE OF status ON emails
WHEN OLD.status <> 'queued' AND NEW.status IS NOT OLD.status
BEGIN
    SELECT RAISE(ABORT, 'emails: a final status never changes');
END;
-- +goose StatementEnd

-- The status history; append-only.
CREATE TABLE email_history (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    email_id   TEXT NOT NULL REFERENCES emails (id) ON DELETE RESTRICT,
    status     TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT '',
    attempt_id TEXT,
    at         TIMESTAMP NOT NULL
);
CREATE INDEX email_history_email ON email_history (email_id, seq);

-- +goose StatementBegin
CREATE TRIGGER email_history_no_update BEFORE UPDATE ON email_history
BEGIN
    SELECT RAISE(ABORT, 'email_history: rows are never changed or deleted');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_history_no_delete BEFORE DELETE ON email_history
BEGIN
    SELECT RAISE(ABORT, 'email_history: rows are never changed or deleted');
END;
-- +goose StatementEnd

-- Addresses courier no longer writes to, matched lower-cased.
CREATE TABLE suppressions (
    address    TEXT NOT NULL CHECK (address = lower(address)),
    reason     TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'complaint')),
    id         TEXT NOT NULL,
    email_id   TEXT REFERENCES emails (id),
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (address, reason)
);

-- The transactional outbox, as identity's.
CREATE TABLE outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    source          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    time            TIMESTAMP NOT NULL,
    data            TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    published_at    TIMESTAMP,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    last_error      TEXT,
    parked_at       TIMESTAMP
);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;

-- +goose StatementBegin
CREATE TRIGGER outbox_keep_unpublished BEFORE DELETE ON outbox
WHEN OLD.published_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'outbox: an unpublished row is never deleted');
END;
-- +goose StatementEnd

CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    key_digest   TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status       INTEGER,
    content_type TEXT,
    location     TEXT,
    body         BLOB,
    created_at   TIMESTAMP NOT NULL,
    completed_at TIMESTAMP,
    PRIMARY KEY (scope, key_digest)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TRIGGER outbox_keep_unpublished;
DROP TABLE outbox;
DROP TABLE suppressions;
DROP TRIGGER email_history_no_delete;
DROP TRIGGER email_history_no_update;
DROP TABLE email_history;
DROP TRIGGER emails_final_status;
DROP TABLE emails;
