-- +goose Up
-- Billing's schema (billing.md). Account ids are identity's UUIDs, kept as
-- data, never foreign keys. Amounts are integer minor units.
CREATE TABLE plans (
    id                 uuid PRIMARY KEY,
    name               text NOT NULL CHECK (name <> '' AND length(name) <= 120),
    products           text NOT NULL CHECK (products IN ('platform', 'identity', 'courier', 'platform,identity', 'platform,courier', 'identity,courier', 'platform,identity,courier')),
    amount             bigint NOT NULL CHECK (amount >= 0),
    currency           text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    interval           text NOT NULL CHECK (interval IN ('once', 'month', 'year')),
    trial_days         integer NOT NULL DEFAULT 0 CHECK (trial_days >= 0 AND (interval <> 'once' OR trial_days = 0)),
    version_range      text CHECK (version_range <> ''),
    active             boolean NOT NULL,
    processor_price_id text NOT NULL CHECK (processor_price_id <> ''),
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX plans_price ON plans (processor_price_id);

-- A plan's currency never changes: a price in another currency is another plan.
-- +goose StatementBegin
CREATE FUNCTION plans_keep_currency() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.currency <> OLD.currency OR NEW.id <> OLD.id THEN
        RAISE EXCEPTION 'plans: a plan keeps its id and its currency';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER plans_keep_currency BEFORE UPDATE ON plans FOR EACH ROW EXECUTE FUNCTION plans_keep_currency();

CREATE TABLE customers (
    id                    uuid PRIMARY KEY,
    account_id            uuid NOT NULL UNIQUE,
    processor_customer_id text NOT NULL UNIQUE CHECK (processor_customer_id <> ''),
    email                 text NOT NULL,
    created_at            timestamptz NOT NULL
);

CREATE TABLE checkouts (
    id                    uuid PRIMARY KEY,
    account_id            uuid NOT NULL,
    plan_id               uuid NOT NULL REFERENCES plans (id),
    user_id               text NOT NULL CHECK (user_id <> ''),
    buyer_role            text NOT NULL CHECK (buyer_role IN ('owner', 'admin')),
    buyer_email           text NOT NULL,
    processor_checkout_id text NOT NULL UNIQUE CHECK (processor_checkout_id <> ''),
    url                   text NOT NULL CHECK (url <> ''),
    idempotency_key       text CHECK (idempotency_key <> ''),
    expires_at            timestamptz NOT NULL,
    created_at            timestamptz NOT NULL,
    UNIQUE (account_id, idempotency_key)
);

-- Every processor event received, once: the unique id is the replay guard,
-- written in the transaction of the state change it causes.
CREATE TABLE processor_events (
    id          text PRIMARY KEY CHECK (id <> '' AND length(id) <= 255),
    type        text NOT NULL,
    created     bigint NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('applied', 'ignored', 'stale', 'needs_attention')),
    received_at timestamptz NOT NULL
);

CREATE TABLE payments (
    id                   uuid PRIMARY KEY,
    processor_payment_id text NOT NULL UNIQUE CHECK (processor_payment_id <> ''),
    account_id           uuid,
    plan_id              uuid REFERENCES plans (id),
    kind                 text NOT NULL CHECK (kind IN ('checkout', 'invoice')),
    amount               bigint NOT NULL CHECK (amount >= 0),
    amount_refunded      bigint NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0 AND amount_refunded <= amount),
    currency             text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    status               text NOT NULL CHECK (status IN ('succeeded', 'failed', 'refunded', 'partially_refunded', 'disputed')),
    email                text NOT NULL DEFAULT '',
    checkout_session_id  text,
    invoice_id           text,
    subscription_id      text,
    last_event_created   bigint NOT NULL,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL
);
CREATE INDEX payments_account ON payments (account_id, id);
CREATE INDEX payments_status ON payments (status, id);

CREATE TABLE subscriptions (
    id                        uuid PRIMARY KEY,
    processor_subscription_id text NOT NULL UNIQUE CHECK (processor_subscription_id <> ''),
    account_id                uuid NOT NULL,
    plan_id                   uuid NOT NULL REFERENCES plans (id),
    status                    text NOT NULL CHECK (status <> ''),
    current_period_end        timestamptz,
    last_event_created        bigint NOT NULL,
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL
);
CREATE INDEX subscriptions_account ON subscriptions (account_id, id);

CREATE TABLE invoices (
    id                   uuid PRIMARY KEY,
    processor_invoice_id text NOT NULL UNIQUE CHECK (processor_invoice_id <> ''),
    account_id           uuid NOT NULL,
    subscription_id      text,
    amount_due           bigint NOT NULL CHECK (amount_due >= 0),
    currency             text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    status               text NOT NULL,
    hosted_url           text,
    pdf_url              text,
    created_at           timestamptz NOT NULL
);
CREATE INDEX invoices_account ON invoices (account_id, id);

CREATE TABLE reconciliations (
    id                 uuid PRIMARY KEY,
    payment_id         uuid UNIQUE REFERENCES payments (id),
    processor_event_id text NOT NULL REFERENCES processor_events (id),
    account_id         uuid,
    plan_id            uuid REFERENCES plans (id),
    state              text NOT NULL CHECK (state IN ('awaiting_grant', 'granted', 'needs_attention', 'revoked')),
    reason             text NOT NULL DEFAULT '',
    facts              text NOT NULL,
    entitlement_ids    text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    CHECK (state <> 'granted' OR entitlement_ids <> '')
);
CREATE INDEX reconciliations_state ON reconciliations (state, id);

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
    parked_at       timestamptz,
    traceparent     text
) WITH (fillfactor = 50);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;
CREATE INDEX outbox_parked ON outbox (seq) WHERE parked_at IS NOT NULL AND published_at IS NULL;

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

-- +goose Down
DROP TABLE outbox;
DROP FUNCTION outbox_keep_unpublished;
DROP TABLE reconciliations;
DROP TABLE invoices;
DROP TABLE subscriptions;
DROP TABLE payments;
DROP TABLE processor_events;
DROP TABLE checkouts;
DROP TABLE customers;
DROP TABLE plans;
DROP FUNCTION plans_keep_currency;
