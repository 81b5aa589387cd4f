-- +goose Up
-- Users' Web Push subscriptions (courier.md section 6). An endpoint is one
-- browser's and belongs to one user at a time; the auth secret is sealed
-- with COURIER_SECRET_BOX_KEY (bound to the endpoint), p256dh is public.
CREATE TABLE push_subscriptions (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL,
    endpoint    text NOT NULL UNIQUE CHECK (endpoint LIKE 'https://%'),
    p256dh      text NOT NULL,
    auth_sealed bytea NOT NULL,
    device      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id, created_at);

-- One email's push to one subscription. data_sealed is the email's
-- template data sealed for the email's id, kept only while the push may
-- still be sent; a final status never changes. subscription_id is
-- emptied when the subscription goes, the push's history stays.
CREATE TABLE push_sends (
    id              uuid PRIMARY KEY,
    email_id        uuid NOT NULL REFERENCES emails (id) ON DELETE RESTRICT,
    subscription_id uuid REFERENCES push_subscriptions (id) ON DELETE SET NULL,
    template        text NOT NULL,
    status          text NOT NULL CHECK (status IN ('queued', 'delivered', 'failed', 'expired')),
    data_sealed     bytea,
    attempts        integer NOT NULL DEFAULT 0,
    attempt_id      uuid,
    next_attempt_at timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT push_sends_data_only_while_queued CHECK (status = 'queued' OR data_sealed IS NULL),
    CONSTRAINT push_sends_queued_has_data CHECK (status <> 'queued' OR (data_sealed IS NOT NULL AND subscription_id IS NOT NULL)),
    UNIQUE (email_id, subscription_id)
);
CREATE INDEX push_sends_due ON push_sends (next_attempt_at) WHERE status = 'queued';
CREATE INDEX push_sends_subscription ON push_sends (subscription_id) WHERE status = 'queued';

-- +goose StatementBegin
CREATE FUNCTION push_sends_final_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'queued' AND NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'push_sends: a final status never changes';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER push_sends_final_status BEFORE UPDATE ON push_sends
    FOR EACH ROW EXECUTE FUNCTION push_sends_final_status();

-- Each push's status history; append-only.
CREATE TABLE push_history (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    push_id    uuid NOT NULL REFERENCES push_sends (id) ON DELETE RESTRICT,
    status     text NOT NULL,
    detail     text NOT NULL DEFAULT '',
    attempt_id uuid,
    at         timestamptz NOT NULL
);
CREATE INDEX push_history_push ON push_history (push_id, seq);

-- +goose StatementBegin
CREATE FUNCTION push_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'push_history: rows are never changed or deleted';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER push_history_append_only BEFORE UPDATE OR DELETE ON push_history
    FOR EACH ROW EXECUTE FUNCTION push_history_append_only();

-- +goose Down
DROP TABLE push_history;
DROP FUNCTION push_history_append_only;
DROP TABLE push_sends;
DROP FUNCTION push_sends_final_status;
DROP TABLE push_subscriptions;
