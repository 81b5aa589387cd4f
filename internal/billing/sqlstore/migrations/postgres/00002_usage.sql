-- +goose Up
-- Usage metering: the records as accepted (idempotent on their id), their
-- hourly sums per account and metric, and the meter events owed to the
-- processor for accounts on a metered plan, sent by a durable relay.
ALTER TABLE plans ADD COLUMN meter text CHECK (meter IS NULL OR (meter ~ '^[a-z0-9_]{1,64}$' AND interval <> 'once'));

CREATE TABLE usage_records (
    id           uuid PRIMARY KEY,
    account_id   uuid NOT NULL,
    metric       text NOT NULL CHECK (metric ~ '^[a-z0-9_]{1,64}$'),
    quantity     bigint NOT NULL CHECK (quantity > 0),
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL,
    source       text NOT NULL CHECK (source <> ''),
    created_at   timestamptz NOT NULL,
    CHECK (window_end >= window_start)
);
CREATE INDEX usage_records_account ON usage_records (account_id, metric, window_start);

CREATE TABLE usage_hourly (
    account_id uuid NOT NULL,
    metric     text NOT NULL,
    hour       timestamptz NOT NULL,
    quantity   bigint NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (account_id, metric, hour)
);

CREATE TABLE meter_reports (
    usage_id              uuid PRIMARY KEY REFERENCES usage_records (id),
    processor_customer_id text NOT NULL CHECK (processor_customer_id <> ''),
    event_name            text NOT NULL CHECK (event_name <> ''),
    value                 bigint NOT NULL CHECK (value > 0),
    occurred_at           timestamptz NOT NULL,
    attempts              integer NOT NULL DEFAULT 0,
    next_attempt_at       timestamptz NOT NULL,
    last_error            text,
    reported_at           timestamptz
);
CREATE INDEX meter_reports_pending ON meter_reports (next_attempt_at) WHERE reported_at IS NULL;

-- An invoice's payment keeps the PaymentIntent that paid it: a refund's
-- charge names the PaymentIntent, not the invoice.
ALTER TABLE payments ADD COLUMN payment_intent_id text;
CREATE INDEX payments_payment_intent ON payments (payment_intent_id);

-- Mail owed to payers (receipts, failed payments), queued with the
-- payment and handed to courier by a relay; the data holds no secret.
CREATE TABLE mail_outbox (
    id              uuid PRIMARY KEY,
    template        text NOT NULL CHECK (template IN ('payment_receipt', 'payment_failed')),
    to_address      text NOT NULL CHECK (to_address <> ''),
    account_id      uuid NOT NULL,
    data            text NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error      text,
    sent_at         timestamptz,
    failed_at       timestamptz,
    created_at      timestamptz NOT NULL
);
CREATE INDEX mail_outbox_pending ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- +goose Down
DROP TABLE mail_outbox;
DROP INDEX payments_payment_intent;
ALTER TABLE payments DROP COLUMN payment_intent_id;
DROP TABLE meter_reports;
DROP TABLE usage_hourly;
DROP TABLE usage_records;
ALTER TABLE plans DROP COLUMN meter;
