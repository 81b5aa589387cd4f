-- +goose Up
-- See the PostgreSQL migration.
ALTER TABLE oidc_tokens ADD COLUMN from_code BOOLEAN NOT NULL DEFAULT FALSE CHECK (NOT from_code OR auth_request_id IS NOT NULL);
CREATE UNIQUE INDEX oidc_tokens_one_exchange ON oidc_tokens (auth_request_id, kind) WHERE from_code;

ALTER TABLE oidc_auth_requests ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE oidc_auth_requests ADD COLUMN max_age INTEGER CHECK (max_age >= 0);

-- +goose Down
DROP INDEX oidc_tokens_one_exchange;
ALTER TABLE oidc_tokens DROP COLUMN from_code;
ALTER TABLE oidc_auth_requests DROP COLUMN max_age;
ALTER TABLE oidc_auth_requests DROP COLUMN prompt;
