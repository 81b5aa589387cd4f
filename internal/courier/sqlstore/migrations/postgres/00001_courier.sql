-- +goose Up
-- One row per send request. data_sealed holds the template data (one-time
-- links) sealed with COURIER_SECRET_BOX_KEY, only while the message may
-- still be sent: the CHECK makes erasing it part of every final status.
CREATE TABLE emails (
    id              uuid PRIMARY KEY,
    template        text NOT NULL,
    recipient       text NOT NULL,
    locale          text NOT NULL,
    requested_by    text NOT NULL,
    status          text NOT NULL CHECK (status IN ('queued', 'delivered', 'bounced', 'failed', 'suppressed')),
    data_sealed     bytea,
    attempts        integer NOT NULL DEFAULT 0,
    attempt_id      uuid,
    next_attempt_at timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT emails_data_only_while_queued CHECK (status = 'queued' OR data_sealed IS NULL),
    CONSTRAINT emails_queued_has_data CHECK (status <> 'queued' OR data_sealed IS NOT NULL)
);
CREATE INDEX emails_due ON emails (next_attempt_at) WHERE status = 'queued';

-- +goose StatementBegin
CREATE FUNCTION emails_final_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'queued' AND NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'emails: a final status never changes';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER emails_final_status BEFORE UPDATE ON emails
    FOR EACH ROW EXECUTE FUNCTION emails_final_status();

-- The status history; append-only.
CREATE TABLE email_history (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_id   uuid NOT NULL REFERENCES emails (id) ON DELETE RESTRICT,
    status     text NOT NULL,
    detail     text NOT NULL DEFAULT '',
    attempt_id uuid,
    at         timestamptz NOT NULL
);
CREATE INDEX email_history_email ON email_history (email_id, seq);

-- +goose StatementBegin
CREATE FUNCTION email_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'email_history: rows are never changed or deleted';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER email_history_append_only BEFORE UPDATE OR DELETE ON email_history
    FOR EACH ROW EXECUTE FUNCTION email_history_append_only();

-- Addresses courier no longer writes to, matched lower-cased.
CREATE TABLE suppressions (
    address    text NOT NULL CHECK (address = lower(address)),
    reason     text NOT NULL CHECK (reason IN ('hard_bounce', 'complaint')),
    id         uuid NOT NULL,
    email_id   uuid REFERENCES emails (id),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (address, reason)
);

-- The transactional outbox, as identity's.
CREATE TABLE outbox (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              uuid NOT NULL UNIQUE,
    type            text NOT NULL,
    source          text NOT NULL,
    subject         text NOT NULL,
    time            timestamptz NOT NULL,
    data            jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    published_at    timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error      text,
    parked_at       timestamptz
) WITH (fillfactor = 50);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;

-- +goose StatementBegin
CREATE FUNCTION outbox_keep_unpublished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.published_at IS NULL THEN
        RAISE EXCEPTION 'outbox: an unpublished row is never deleted';
    END IF;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_keep_unpublished BEFORE DELETE ON outbox
    FOR EACH ROW EXECUTE FUNCTION outbox_keep_unpublished();

CREATE TABLE idempotency_keys (
    scope        text NOT NULL,
    key_digest   text NOT NULL,
    fingerprint  text NOT NULL,
    status       integer,
    content_type text,
    location     text,
    body         bytea,
    created_at   timestamptz NOT NULL,
    completed_at timestamptz,
    PRIMARY KEY (scope, key_digest)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE outbox;
DROP FUNCTION outbox_keep_unpublished;
DROP TABLE suppressions;
DROP TABLE email_history;
DROP FUNCTION email_history_append_only;
DROP TABLE emails;
DROP FUNCTION emails_final_status;
