-- +goose Up
-- Users' Web Push subscriptions (courier.md section 6). An endpoint is one
-- browser's and belongs to one user at a time; the auth secret is sealed
-- with COURIER_SECRET_BOX_KEY (bound to the endpoint), p256dh is public.
CREATE TABLE push_subscriptions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    endpoint    TEXT NOT NULL UNIQUE CHECK (endpoint LIKE 'https://%'),
    p256dh      TEXT NOT NULL,
    auth_sealed BLOB NOT NULL,
    device      TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id, created_at);

-- One email's push to one subscription. data_sealed is the email's
-- template data sealed for the email's id, kept only while the push may
-- still be sent; a final status never changes. subscription_id is
-- emptied when the subscription goes, the push's history stays.
CREATE TABLE push_sends (
    id              TEXT PRIMARY KEY,
    email_id        TEXT NOT NULL REFERENCES emails (id) ON DELETE RESTRICT,
    subscription_id TEXT REFERENCES push_subscriptions (id) ON DELETE SET NULL,
    template        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('queued', 'delivered', 'failed', 'expired')),
    data_sealed     BLOB,
    attempts        INTEGER NOT NULL DEFAULT 0,
    attempt_id      TEXT,
    next_attempt_at TIMESTAMP NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    CONSTRAINT push_sends_data_only_while_queued CHECK (status = 'queued' OR data_sealed IS NULL),
    CONSTRAINT push_sends_queued_has_data CHECK (status <> 'queued' OR (data_sealed IS NOT NULL AND subscription_id IS NOT NULL)),
    UNIQUE (email_id, subscription_id)
);
CREATE INDEX push_sends_due ON push_sends (next_attempt_at) WHERE status = 'queued';
CREATE INDEX push_sends_subscription ON push_sends (subscription_id) WHERE status = 'queued';

-- +goose StatementBegin
CREATE TRIGGER push_sends_final_status BEFORE UPDATE OF status ON push_sends
WHEN OLD.status <> 'queued' AND NEW.status IS NOT OLD.status
BEGIN
    SELECT RAISE(ABORT, 'push_sends: a final status never changes');
END;
-- +goose StatementEnd

-- Each push's status history; append-only.
CREATE TABLE push_history (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    push_id    TEXT NOT NULL REFERENCES push_sends (id) ON DELETE RESTRICT,
    status     TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT '',
    attempt_id TEXT,
    at         TIMESTAMP NOT NULL
);
CREATE INDEX push_history_push ON push_history (push_id, seq);

-- +goose StatementBegin
CREATE TRIGGER push_history_no_update BEFORE UPDATE ON push_history
BEGIN
    SELECT RAISE(ABORT, 'push_history: rows are never changed or deleted');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER push_history_no_delete BEFORE DELETE ON push_history
BEGIN
    SELECT RAISE(ABORT, 'push_history: rows are never changed or deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER push_history_no_delete;
DROP TRIGGER push_history_no_update;
DROP TABLE push_history;
DROP TRIGGER push_sends_final_status;
DROP TABLE push_sends;
DROP TABLE push_subscriptions;
