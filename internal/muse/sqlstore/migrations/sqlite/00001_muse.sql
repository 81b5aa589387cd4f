-- +goose Up
-- The vault (muse.md section 3): provider keys sealed with MUSE_VAULT_KEY
-- and the row's id; only the last four characters are kept in the clear.
-- account_id is NULL for a platform-wide (staff's) credential. A name is
-- unique within its account, and among the platform's.
CREATE TABLE provider_credentials (
    id         TEXT PRIMARY KEY,
    account_id TEXT,
    provider   TEXT NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    base_url   TEXT NOT NULL DEFAULT '' CHECK (base_url = '' OR base_url LIKE 'http://%' OR base_url LIKE 'https://%'),
    sealed_key BLOB NOT NULL,
    last_four  TEXT NOT NULL CHECK (length(last_four) <= 4),
    created_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX provider_credentials_name ON provider_credentials (coalesce(account_id, ''), name);

-- Aliases and their ordered targets. A target names an existing
-- credential for as long as it exists: deleting a credential an alias
-- routes to is refused by the foreign key.
CREATE TABLE model_aliases (
    account_id TEXT NOT NULL,
    alias      TEXT NOT NULL CHECK (length(alias) BETWEEN 1 AND 64),
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, alias)
);

CREATE TABLE alias_targets (
    account_id     TEXT NOT NULL,
    alias          TEXT NOT NULL,
    position       INTEGER NOT NULL CHECK (position >= 0),
    credential_id  TEXT NOT NULL REFERENCES provider_credentials (id) ON DELETE RESTRICT,
    upstream_model TEXT NOT NULL CHECK (length(upstream_model) BETWEEN 1 AND 128),
    weight         INTEGER NOT NULL DEFAULT 0 CHECK (weight BETWEEN 0 AND 1000),
    PRIMARY KEY (account_id, alias, position),
    FOREIGN KEY (account_id, alias) REFERENCES model_aliases (account_id, alias) ON DELETE CASCADE
);
CREATE INDEX alias_targets_credential ON alias_targets (credential_id);

CREATE TABLE budgets (
    account_id     TEXT PRIMARY KEY,
    monthly_tokens INTEGER NOT NULL CHECK (monthly_tokens > 0),
    updated_at     TIMESTAMP NOT NULL
);

-- One row per metered completion (muse.md section 4).
CREATE TABLE usage (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL,
    caller            TEXT NOT NULL,
    alias             TEXT NOT NULL,
    provider          TEXT NOT NULL,
    upstream_model    TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens INTEGER NOT NULL CHECK (completion_tokens >= 0),
    estimated         BOOLEAN NOT NULL,
    latency_ms        INTEGER NOT NULL CHECK (latency_ms >= 0),
    status            TEXT NOT NULL CHECK (status IN ('ok', 'client_closed', 'upstream_failed')),
    day               TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL
);
CREATE INDEX usage_account_day ON usage (account_id, day);

-- The month's total per account, kept equal to the sum of its usage rows
-- by the trigger below, for every connection: budgets read one row.
CREATE TABLE usage_months (
    account_id TEXT NOT NULL,
    month      TEXT NOT NULL,
    tokens     INTEGER NOT NULL CHECK (tokens >= 0),
    PRIMARY KEY (account_id, month)
);

-- +goose StatementBegin
CREATE TRIGGER usage_month_add AFTER INSERT ON usage
BEGIN
    INSERT INTO usage_months (account_id, month, tokens)
    VALUES (NEW.account_id, substr(NEW.day, 1, 7), NEW.prompt_tokens + NEW.completion_tokens)
    ON CONFLICT (account_id, month) DO UPDATE SET tokens = tokens + excluded.tokens;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER usage_no_update BEFORE UPDATE ON usage
BEGIN
    SELECT RAISE(ABORT, 'usage: metered rows are never changed or deleted');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER usage_no_delete BEFORE DELETE ON usage
BEGIN
    SELECT RAISE(ABORT, 'usage: metered rows are never changed or deleted');
END;
-- +goose StatementEnd


-- The transactional outbox, as identity's and courier's.
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
DROP TRIGGER usage_no_delete;
DROP TRIGGER usage_no_update;
DROP TRIGGER usage_month_add;
DROP TABLE usage_months;
DROP TABLE usage;
DROP TABLE budgets;
DROP TABLE alias_targets;
DROP TABLE model_aliases;
DROP TABLE provider_credentials;
