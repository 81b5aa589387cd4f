-- +goose Up
-- One-time tokens of the credential lifecycle (identity-lifecycle.md
-- sections 1-3). Only a SHA-256 digest is kept; email is the address the
-- token proves (verification) or asks for (email change), so a token
-- issued for an address the user has since left proves nothing.
CREATE TABLE user_tokens (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose      text NOT NULL CHECK (purpose IN ('verify_email', 'password_reset', 'email_change')),
    token_digest text NOT NULL,
    email        text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL CHECK (expires_at > created_at),
    used_at      timestamptz
);
CREATE UNIQUE INDEX user_tokens_token_digest_key ON user_tokens (token_digest);
CREATE INDEX user_tokens_user_id ON user_tokens (user_id);

-- A consumed token stays consumed: single use holds for every connection.
-- +goose StatementBegin
CREATE FUNCTION user_tokens_single_use() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.used_at IS NOT NULL AND NEW.used_at IS DISTINCT FROM OLD.used_at THEN
        RAISE EXCEPTION 'user_tokens: a used token stays used' USING ERRCODE = 'P0001';
    END IF;
    IF NEW.token_digest <> OLD.token_digest OR NEW.user_id <> OLD.user_id OR NEW.purpose <> OLD.purpose THEN
        RAISE EXCEPTION 'user_tokens: a token never changes what it is' USING ERRCODE = 'P0001';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER user_tokens_single_use BEFORE UPDATE ON user_tokens
    FOR EACH ROW EXECUTE FUNCTION user_tokens_single_use();

-- When the last verification link went out: one conditional UPDATE of it
-- enforces the resend limit under concurrency.
ALTER TABLE users ADD COLUMN verification_sent_at timestamptz;

-- Mail identity asks courier to send (courier.md section 5), written in
-- the transaction of the flow that causes it. data_sealed holds the
-- template data (one-time links) sealed with IDENTITY_MASTER_KEY and is
-- erased once courier has accepted the request.
CREATE TABLE mail_outbox (
    id              uuid PRIMARY KEY,
    template        text NOT NULL,
    recipient       text NOT NULL,
    data_sealed     bytea,
    created_at      timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    sent_at         timestamptz,
    last_error      text,
    CHECK (sent_at IS NULL OR data_sealed IS NULL)
);
CREATE INDEX mail_outbox_pending ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL;

-- +goose Down
DROP TABLE mail_outbox;
ALTER TABLE users DROP COLUMN verification_sent_at;
DROP TABLE user_tokens;
DROP FUNCTION user_tokens_single_use;
