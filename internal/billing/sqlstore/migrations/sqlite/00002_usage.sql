-- +goose Up
-- Usage metering: the records as accepted (idempotent on their id), their
-- hourly sums per account and metric, and the meter events owed to the
-- processor for accounts on a metered plan, sent by a durable relay.
ALTER TABLE plans ADD COLUMN meter TEXT CHECK (meter IS NULL OR (length(meter) BETWEEN 1 AND 64 AND meter NOT GLOB '*[^a-z0-9_]*' AND interval <> 'once'));

CREATE TABLE usage_records (
    id           TEXT PRIMARY KEY CHECK (length(id) = 36),
    account_id   TEXT NOT NULL CHECK (length(account_id) = 36),
    metric       TEXT NOT NULL CHECK (length(metric) BETWEEN 1 AND 64 AND metric NOT GLOB '*[^a-z0-9_]*'),
    quantity     INTEGER NOT NULL CHECK (typeof(quantity) = 'integer' AND quantity > 0),
    window_start TIMESTAMP NOT NULL,
    window_end   TIMESTAMP NOT NULL,
    source       TEXT NOT NULL CHECK (source <> ''),
    created_at   TIMESTAMP NOT NULL,
    CHECK (window_end >= window_start)
);
CREATE INDEX usage_records_account ON usage_records (account_id, metric, window_start);

CREATE TABLE usage_hourly (
    account_id TEXT NOT NULL CHECK (length(account_id) = 36),
    metric     TEXT NOT NULL,
    hour       TIMESTAMP NOT NULL,
    quantity   INTEGER NOT NULL CHECK (typeof(quantity) = 'integer' AND quantity > 0),
    PRIMARY KEY (account_id, metric, hour)
);

CREATE TABLE meter_reports (
    usage_id              TEXT PRIMARY KEY REFERENCES usage_records (id),
    processor_customer_id TEXT NOT NULL CHECK (processor_customer_id <> ''),
    event_name            TEXT NOT NULL CHECK (event_name <> ''),
    value                 INTEGER NOT NULL CHECK (value > 0),
    occurred_at           TIMESTAMP NOT NULL,
    attempts              INTEGER NOT NULL DEFAULT 0,
    next_attempt_at       TIMESTAMP NOT NULL,
    last_error            TEXT,
    reported_at           TIMESTAMP
);
CREATE INDEX meter_reports_pending ON meter_reports (next_attempt_at) WHERE reported_at IS NULL;

-- An invoice's payment keeps the PaymentIntent that paid it: a refund's
-- charge names the PaymentIntent, not the invoice.
ALTER TABLE payments ADD COLUMN payment_intent_id TEXT;
CREATE INDEX payments_payment_intent ON payments (payment_intent_id);

-- Mail owed to payers (receipts, failed payments), queued with the
-- payment and handed to courier by a relay; the data holds no secret.
CREATE TABLE mail_outbox (
    id              TEXT PRIMARY KEY,
    template        TEXT NOT NULL CHECK (template IN ('payment_receipt', 'payment_failed')),
    to_address      TEXT NOT NULL CHECK (to_address <> ''),
    account_id      TEXT NOT NULL,
    data            TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    last_error      TEXT,
    sent_at         TIMESTAMP,
    failed_at       TIMESTAMP,
    created_at      TIMESTAMP NOT NULL
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
