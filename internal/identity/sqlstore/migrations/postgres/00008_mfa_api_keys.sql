-- +goose Up
-- One TOTP factor per user. secret_sealed is the confirmed (active) secret,
-- pending_sealed one enrolled but not yet confirmed (a rotation keeps the
-- old one working until then); both are sealed with IDENTITY_MASTER_KEY.
-- last_step is the last time step accepted: a code is accepted only for a
-- later step, by one conditional UPDATE, so a code is used at most once.
CREATE TABLE mfa_totp (
    user_id        uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_sealed  bytea,
    pending_sealed bytea,
    last_step      bigint NOT NULL DEFAULT 0 CHECK (last_step >= 0),
    enabled_at     timestamptz,
    updated_at     timestamptz NOT NULL,
    CHECK (secret_sealed IS NOT NULL OR pending_sealed IS NOT NULL),
    CHECK ((secret_sealed IS NULL) = (enabled_at IS NULL))
);

-- Recovery codes, digests only; pending ones belong to an unconfirmed
-- enrolment and replace the active set when it is confirmed.
CREATE TABLE mfa_recovery_codes (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    digest     text NOT NULL,
    pending    boolean NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, digest)
);

-- The second step of a sign-in with MFA, single use.
CREATE TABLE mfa_challenges (
    digest     text PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL
);
CREATE INDEX mfa_challenges_user_id ON mfa_challenges (user_id);

-- API keys act for one account; only the token's digest is kept. scopes
-- is a space-separated subset of the closed set.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
    scopes       text NOT NULL CHECK (scopes <> ''),
    digest       text NOT NULL,
    created_by   uuid NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE UNIQUE INDEX api_keys_digest_key ON api_keys (digest);
CREATE INDEX api_keys_account_id ON api_keys (account_id, created_at);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE mfa_challenges;
DROP TABLE mfa_recovery_codes;
DROP TABLE mfa_totp;
