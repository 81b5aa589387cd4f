-- +goose Up
-- The vault (muse.md section 3): provider keys sealed with MUSE_VAULT_KEY
-- and the row's id; only the last four characters are kept in the clear.
-- account_id is NULL for a platform-wide (staff's) credential. A name is
-- unique within its account, and among the platform's.
CREATE TABLE provider_credentials (
    id         uuid PRIMARY KEY,
    account_id uuid,
    provider   text NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    base_url   text NOT NULL DEFAULT '' CHECK (base_url = '' OR base_url ~ '^https?://'),
    sealed_key bytea NOT NULL,
    last_four  text NOT NULL CHECK (char_length(last_four) <= 4),
    created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX provider_credentials_name ON provider_credentials (coalesce(account_id::text, ''), name);

-- Aliases and their ordered targets. A target names an existing
-- credential for as long as it exists: deleting a credential an alias
-- routes to is refused by the foreign key.
CREATE TABLE model_aliases (
    account_id uuid NOT NULL,
    alias      text NOT NULL CHECK (char_length(alias) BETWEEN 1 AND 64),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, alias)
);

CREATE TABLE alias_targets (
    account_id     uuid NOT NULL,
    alias          text NOT NULL,
    position       integer NOT NULL CHECK (position >= 0),
    credential_id  uuid NOT NULL REFERENCES provider_credentials (id) ON DELETE RESTRICT,
    upstream_model text NOT NULL CHECK (char_length(upstream_model) BETWEEN 1 AND 128),
    weight         integer NOT NULL DEFAULT 0 CHECK (weight BETWEEN 0 AND 1000),
    PRIMARY KEY (account_id, alias, position),
    FOREIGN KEY (account_id, alias) REFERENCES model_aliases (account_id, alias) ON DELETE CASCADE
);
CREATE INDEX alias_targets_credential ON alias_targets (credential_id);

CREATE TABLE budgets (
    account_id     uuid PRIMARY KEY,
    monthly_tokens bigint NOT NULL CHECK (monthly_tokens > 0),
    updated_at     timestamptz NOT NULL
);

-- One row per metered completion (muse.md section 4).
CREATE TABLE usage (
    id                uuid PRIMARY KEY,
    account_id        uuid NOT NULL,
    caller            text NOT NULL,
    alias             text NOT NULL,
    provider          text NOT NULL,
    upstream_model    text NOT NULL,
    prompt_tokens     bigint NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens bigint NOT NULL CHECK (completion_tokens >= 0),
    estimated         boolean NOT NULL,
    latency_ms        bigint NOT NULL CHECK (latency_ms >= 0),
    status            text NOT NULL CHECK (status IN ('ok', 'client_closed', 'upstream_failed')),
    day               text NOT NULL,
    created_at        timestamptz NOT NULL
);
CREATE INDEX usage_account_day ON usage (account_id, day);

-- The month's total per account, kept equal to the sum of its usage rows
-- by the trigger below, for every connection: budgets read one row.
CREATE TABLE usage_months (
    account_id uuid NOT NULL,
    month      text NOT NULL,
    tokens     bigint NOT NULL CHECK (tokens >= 0),
    PRIMARY KEY (account_id, month)
);

-- +goose StatementBegin
CREATE FUNCTION usage_month_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_months (account_id, month, tokens)
    VALUES (NEW.account_id, substr(NEW.day, 1, 7), NEW.prompt_tokens + NEW.completion_tokens)
    ON CONFLICT (account_id, month) DO UPDATE SET tokens = usage_months.tokens + EXCLUDED.tokens;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER usage_month_add AFTER INSERT ON usage
    FOR EACH ROW EXECUTE FUNCTION usage_month_add();

-- +goose StatementBegin
CREATE FUNCTION usage_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'usage: metered rows are never changed or deleted';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER usage_append_only BEFORE UPDATE OR DELETE ON usage
    FOR EACH ROW EXECUTE FUNCTION usage_append_only();


-- The transactional outbox, as identity's and courier's.
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
DROP TABLE usage_months;
DROP TABLE usage;
DROP FUNCTION usage_append_only;
DROP FUNCTION usage_month_add;
DROP TABLE budgets;
DROP TABLE alias_targets;
DROP TABLE model_aliases;
DROP TABLE provider_credentials;
