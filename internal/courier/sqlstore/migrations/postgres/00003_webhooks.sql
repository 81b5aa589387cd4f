-- +goose Up
-- An account's webhook endpoints. The signing secret is sealed with
-- COURIER_SECRET_BOX_KEY; failing_since is when the endpoint's deliveries
-- started failing without a success since.
CREATE TABLE webhook_endpoints (
    id              uuid PRIMARY KEY,
    account_id      uuid NOT NULL,
    url             text NOT NULL,
    event_types     text NOT NULL,
    description     text NOT NULL DEFAULT '',
    secret_sealed   bytea NOT NULL,
    disabled        boolean NOT NULL DEFAULT false,
    disabled_reason text NOT NULL DEFAULT '',
    failing_since   timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id);

-- One event's delivery to one endpoint: the UNIQUE is what makes two
-- replicas consuming one stream deliver each event once per endpoint.
CREATE TABLE webhook_deliveries (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              uuid NOT NULL UNIQUE,
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL,
    event_type      text NOT NULL,
    body            text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    attempt_id      uuid,
    next_attempt_at timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq);

CREATE TABLE webhook_attempts (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id  uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at           timestamptz NOT NULL,
    status_code  integer NOT NULL DEFAULT 0,
    latency_ms   bigint NOT NULL,
    response     text NOT NULL DEFAULT '' CHECK (octet_length(response) <= 1024),
    error        text NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, seq);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
