-- +goose Up
-- An account's webhook endpoints. The signing secret is sealed with
-- COURIER_SECRET_BOX_KEY; failing_since is when the endpoint's deliveries
-- started failing without a success since.
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    url             TEXT NOT NULL,
    event_types     TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    secret_sealed   BLOB NOT NULL,
    disabled        BOOLEAN NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    disabled_reason TEXT NOT NULL DEFAULT '',
    failing_since   TIMESTAMP,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id);

-- One event's delivery to one endpoint: the UNIQUE is what makes two
-- replicas consuming one stream deliver each event once per endpoint.
CREATE TABLE webhook_deliveries (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    attempt_id      TEXT,
    next_attempt_at TIMESTAMP NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq);

CREATE TABLE webhook_attempts (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id  TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at           TIMESTAMP NOT NULL,
    status_code  INTEGER NOT NULL DEFAULT 0,
    latency_ms   INTEGER NOT NULL,
    response     TEXT NOT NULL DEFAULT '' CHECK (length(CAST(response AS BLOB)) <= 1024),
    error        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, seq);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
