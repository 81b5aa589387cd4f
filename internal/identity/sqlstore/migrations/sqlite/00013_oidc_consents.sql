-- +goose Up
-- See the PostgreSQL migration.
CREATE TABLE oidc_consents (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id  TEXT NOT NULL REFERENCES oidc_clients (id) ON DELETE CASCADE,
    scopes     TEXT NOT NULL,
    granted_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, client_id),
    CONSTRAINT oidc_consents_order CHECK (updated_at >= granted_at)
);
CREATE INDEX oidc_consents_client ON oidc_consents (client_id);

-- Foreign keys as triggers, so they hold for every connection (as 00006
-- and 00009 do for the earlier tables).
-- +goose StatementBegin
CREATE TRIGGER oidc_consents_clients_cascade_delete AFTER DELETE ON oidc_clients
BEGIN
    DELETE FROM oidc_consents WHERE client_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_consents_users_cascade_delete AFTER DELETE ON users
BEGIN
    DELETE FROM oidc_consents WHERE user_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_consents_parent_insert BEFORE INSERT ON oidc_consents
WHEN NOT EXISTS (SELECT 1 FROM oidc_clients WHERE id = NEW.client_id)
  OR NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_consents names no such client or user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_consents_parent_update BEFORE UPDATE OF client_id, user_id ON oidc_consents
WHEN NOT EXISTS (SELECT 1 FROM oidc_clients WHERE id = NEW.client_id)
  OR NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_consents names no such client or user');
END;
-- +goose StatementEnd

-- A code's tokens are found by oidc_tokens_one_exchange (auth_request_id,
-- kind) WHERE from_code, and every other token through their family: the
-- plain index on auth_request_id only cost each code exchange one more
-- page written.
DROP INDEX oidc_tokens_auth_request;

-- +goose Down
CREATE INDEX oidc_tokens_auth_request ON oidc_tokens (auth_request_id);
DROP TRIGGER oidc_consents_parent_update;
DROP TRIGGER oidc_consents_parent_insert;
DROP TRIGGER oidc_consents_users_cascade_delete;
DROP TRIGGER oidc_consents_clients_cascade_delete;
DROP TABLE oidc_consents;
