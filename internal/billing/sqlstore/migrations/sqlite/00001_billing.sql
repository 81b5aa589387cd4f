-- +goose Up
-- The SQLite twin of the PostgreSQL schema: TEXT ids, TIMESTAMP as UTC
-- text, RAISE(ABORT) triggers in place of plpgsql.
CREATE TABLE plans (
    id                 TEXT PRIMARY KEY CHECK (length(id) = 36),
    name               TEXT NOT NULL CHECK (name <> '' AND length(name) <= 120),
    products           TEXT NOT NULL CHECK (products IN ('platform', 'identity', 'courier', 'platform,identity', 'platform,courier', 'identity,courier', 'platform,identity,courier')),
    amount             INTEGER NOT NULL CHECK (typeof(amount) = 'integer' AND amount >= 0),
    currency           TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^a-z]*'),
    interval           TEXT NOT NULL CHECK (interval IN ('once', 'month', 'year')),
    trial_days         INTEGER NOT NULL DEFAULT 0 CHECK (trial_days >= 0 AND (interval <> 'once' OR trial_days = 0)),
    version_range      TEXT CHECK (version_range <> ''),
    active             BOOLEAN NOT NULL,
    processor_price_id TEXT NOT NULL CHECK (processor_price_id <> ''),
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);
CREATE INDEX plans_price ON plans (processor_price_id);

-- +goose StatementBegin
CREATE TRIGGER plans_keep_currency BEFORE UPDATE ON plans
WHEN NEW.currency <> OLD.currency OR NEW.id <> OLD.id
BEGIN
    SELECT RAISE(ABORT, 'plans: a plan keeps its id and its currency');
END;
-- +goose StatementEnd

CREATE TABLE customers (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL UNIQUE CHECK (length(account_id) = 36),
    processor_customer_id TEXT NOT NULL UNIQUE CHECK (processor_customer_id <> ''),
    email                 TEXT NOT NULL,
    created_at            TIMESTAMP NOT NULL
);

CREATE TABLE checkouts (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL CHECK (length(account_id) = 36),
    plan_id               TEXT NOT NULL REFERENCES plans (id),
    user_id               TEXT NOT NULL CHECK (user_id <> ''),
    buyer_role            TEXT NOT NULL CHECK (buyer_role IN ('owner', 'admin')),
    buyer_email           TEXT NOT NULL,
    processor_checkout_id TEXT NOT NULL UNIQUE CHECK (processor_checkout_id <> ''),
    url                   TEXT NOT NULL CHECK (url <> ''),
    idempotency_key       TEXT CHECK (idempotency_key <> ''),
    expires_at            TIMESTAMP NOT NULL,
    created_at            TIMESTAMP NOT NULL,
    UNIQUE (account_id, idempotency_key)
);

CREATE TABLE processor_events (
    id          TEXT PRIMARY KEY CHECK (id <> '' AND length(id) <= 255),
    type        TEXT NOT NULL,
    created     INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('applied', 'ignored', 'stale', 'needs_attention')),
    received_at TIMESTAMP NOT NULL
);

CREATE TABLE payments (
    id                   TEXT PRIMARY KEY,
    processor_payment_id TEXT NOT NULL UNIQUE CHECK (processor_payment_id <> ''),
    account_id           TEXT CHECK (length(account_id) = 36),
    plan_id              TEXT REFERENCES plans (id),
    kind                 TEXT NOT NULL CHECK (kind IN ('checkout', 'invoice')),
    amount               INTEGER NOT NULL CHECK (typeof(amount) = 'integer' AND amount >= 0),
    amount_refunded      INTEGER NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0 AND amount_refunded <= amount),
    currency             TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^a-z]*'),
    status               TEXT NOT NULL CHECK (status IN ('succeeded', 'failed', 'refunded', 'partially_refunded', 'disputed')),
    email                TEXT NOT NULL DEFAULT '',
    checkout_session_id  TEXT,
    invoice_id           TEXT,
    subscription_id      TEXT,
    last_event_created   INTEGER NOT NULL,
    created_at           TIMESTAMP NOT NULL,
    updated_at           TIMESTAMP NOT NULL
);
CREATE INDEX payments_account ON payments (account_id, id);
CREATE INDEX payments_status ON payments (status, id);

CREATE TABLE subscriptions (
    id                        TEXT PRIMARY KEY,
    processor_subscription_id TEXT NOT NULL UNIQUE CHECK (processor_subscription_id <> ''),
    account_id                TEXT NOT NULL CHECK (length(account_id) = 36),
    plan_id                   TEXT NOT NULL REFERENCES plans (id),
    status                    TEXT NOT NULL CHECK (status <> ''),
    current_period_end        TIMESTAMP,
    last_event_created        INTEGER NOT NULL,
    created_at                TIMESTAMP NOT NULL,
    updated_at                TIMESTAMP NOT NULL
);
CREATE INDEX subscriptions_account ON subscriptions (account_id, id);

CREATE TABLE invoices (
    id                   TEXT PRIMARY KEY,
    processor_invoice_id TEXT NOT NULL UNIQUE CHECK (processor_invoice_id <> ''),
    account_id           TEXT NOT NULL CHECK (length(account_id) = 36),
    subscription_id      TEXT,
    amount_due           INTEGER NOT NULL CHECK (amount_due >= 0),
    currency             TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^a-z]*'),
    status               TEXT NOT NULL,
    hosted_url           TEXT,
    pdf_url              TEXT,
    created_at           TIMESTAMP NOT NULL
);
CREATE INDEX invoices_account ON invoices (account_id, id);

CREATE TABLE reconciliations (
    id                 TEXT PRIMARY KEY,
    payment_id         TEXT UNIQUE REFERENCES payments (id),
    processor_event_id TEXT NOT NULL REFERENCES processor_events (id),
    account_id         TEXT,
    plan_id            TEXT REFERENCES plans (id),
    state              TEXT NOT NULL CHECK (state IN ('awaiting_grant', 'granted', 'needs_attention', 'revoked')),
    reason             TEXT NOT NULL DEFAULT '',
    facts              TEXT NOT NULL,
    entitlement_ids    TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL,
    CHECK (state <> 'granted' OR entitlement_ids <> '')
);
CREATE INDEX reconciliations_state ON reconciliations (state, id);

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
    parked_at       TIMESTAMP,
    traceparent     TEXT
);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;
CREATE INDEX outbox_parked ON outbox (seq) WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- +goose StatementBegin
CREATE TRIGGER outbox_keep_unpublished BEFORE DELETE ON outbox
WHEN OLD.published_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'outbox: an unpublished row is never deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER outbox_keep_unpublished;
DROP TABLE outbox;
DROP TABLE reconciliations;
DROP TABLE invoices;
DROP TABLE subscriptions;
DROP TABLE payments;
DROP TABLE processor_events;
DROP TABLE checkouts;
DROP TABLE customers;
DROP TRIGGER plans_keep_currency;
DROP TABLE plans;
