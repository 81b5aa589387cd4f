-- +goose Up
-- Emails are stored normalised (trimmed, lower-case), so uniqueness is
-- case-insensitive without a functional index.
CREATE TABLE users (
    id            uuid PRIMARY KEY,
    email         text COLLATE "C" NOT NULL,
    display_name  text NOT NULL DEFAULT '',
    password_hash text NOT NULL,
    staff         boolean NOT NULL DEFAULT false,
    failed_logins integer NOT NULL DEFAULT 0 CHECK (failed_logins >= 0),
    locked_until  timestamptz,
    disabled_at   timestamptz,
    verified_at   timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (email);

CREATE TABLE sessions (
    id         uuid PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at   timestamptz
);
CREATE INDEX sessions_user_id ON sessions (user_id);

CREATE TABLE accounts (
    id         uuid PRIMARY KEY,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
    slug       text NOT NULL CHECK (length(slug) BETWEEN 1 AND 63),
    personal   boolean NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX accounts_slug_key ON accounts (slug);

CREATE TABLE memberships (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user_id ON memberships (user_id);

-- Only a SHA-256 digest of an invitation token is kept.
CREATE TABLE invitations (
    id           uuid PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email        text NOT NULL,
    role         text NOT NULL CHECK (role IN ('admin', 'member')),
    token_digest text NOT NULL,
    invited_by   uuid NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    accepted_at  timestamptz,
    accepted_by  uuid
);
CREATE UNIQUE INDEX invitations_token_digest_key ON invitations (token_digest);
CREATE INDEX invitations_account_id ON invitations (account_id);

-- Private keys are sealed with IDENTITY_MASTER_KEY (AES-256-GCM).
CREATE TABLE signing_keys (
    kid                text PRIMARY KEY,
    algorithm          text NOT NULL,
    public_key         bytea NOT NULL,
    private_key_sealed bytea NOT NULL,
    created_at         timestamptz NOT NULL,
    withdrawn_at       timestamptz
);

-- The transactional outbox. seq is creation order; id is the envelope id,
-- fixed at insert and reused on every delivery attempt.
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
);
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

-- +goose Down
DROP TABLE outbox;
DROP FUNCTION outbox_keep_unpublished;
DROP TABLE signing_keys;
DROP TABLE invitations;
DROP TABLE memberships;
DROP TABLE accounts;
DROP TABLE sessions;
DROP TABLE users;
