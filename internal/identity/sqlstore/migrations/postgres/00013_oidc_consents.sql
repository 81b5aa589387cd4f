-- +goose Up
-- What a user allowed a relying party: one row per (user, client), its
-- scopes the union of every grant. The authorization endpoint asks again
-- only for scopes not covered (or on prompt=consent); prompt=none succeeds
-- on it. Withdrawing it, or deleting the client, deletes the row.
CREATE TABLE oidc_consents (
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id  UUID NOT NULL REFERENCES oidc_clients (id) ON DELETE CASCADE,
    scopes     TEXT NOT NULL,
    granted_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, client_id),
    CONSTRAINT oidc_consents_order CHECK (updated_at >= granted_at)
);
CREATE INDEX oidc_consents_client ON oidc_consents (client_id);

-- A code's tokens are found by oidc_tokens_one_exchange (auth_request_id,
-- kind) WHERE from_code, and every other token through their family: the
-- plain index on auth_request_id only cost each code exchange one more
-- page written.
DROP INDEX oidc_tokens_auth_request;

-- +goose Down
CREATE INDEX oidc_tokens_auth_request ON oidc_tokens (auth_request_id);
DROP TABLE oidc_consents;
