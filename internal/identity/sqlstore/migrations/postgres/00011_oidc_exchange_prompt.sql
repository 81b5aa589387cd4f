-- +goose Up
-- A code exchange is one statement: it inserts the tokens the code issues
-- (from_code) only while the request's code is unused, and this index lets
-- at most one exchange of a code ever insert them, so a concurrent second
-- exchange fails on it and is then treated as a reuse.
ALTER TABLE oidc_tokens ADD COLUMN from_code BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE oidc_tokens ADD CONSTRAINT oidc_tokens_from_code CHECK (NOT from_code OR auth_request_id IS NOT NULL);
CREATE UNIQUE INDEX oidc_tokens_one_exchange ON oidc_tokens (auth_request_id, kind) WHERE from_code;

-- What the request asked of the sign-in (OIDC Core §3.1.2.1): prompt as
-- given ('' when absent), max_age in seconds (0 for prompt=login; NULL when
-- neither asks for a fresh sign-in).
ALTER TABLE oidc_auth_requests ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE oidc_auth_requests ADD COLUMN max_age BIGINT CHECK (max_age >= 0);

-- +goose Down
ALTER TABLE oidc_auth_requests DROP COLUMN max_age;
ALTER TABLE oidc_auth_requests DROP COLUMN prompt;
DROP INDEX oidc_tokens_one_exchange;
ALTER TABLE oidc_tokens DROP CONSTRAINT oidc_tokens_from_code;
ALTER TABLE oidc_tokens DROP COLUMN from_code;
