-- +goose Up
-- The SQLite twin: SQLite cannot drop a NOT NULL, so the table is built
-- again with the file column and the rule, and its triggers with it.
CREATE TABLE pulls_next (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    credential_id TEXT REFERENCES credentials (id) ON DELETE RESTRICT,
    account_id    TEXT NOT NULL CHECK (length(account_id) = 36),
    repository    TEXT NOT NULL,
    tag           TEXT NOT NULL CHECK (tag <> ''),
    digest        TEXT NOT NULL CHECK (digest LIKE 'sha256:%'),
    pulled_at     TIMESTAMP NOT NULL,
    file          TEXT CHECK (file <> '' AND length(file) <= 255),
    CHECK ((credential_id IS NULL) <> (file IS NULL))
);
INSERT INTO pulls_next (id, credential_id, account_id, repository, tag, digest, pulled_at)
    SELECT id, credential_id, account_id, repository, tag, digest, pulled_at FROM pulls;
DROP TABLE pulls;
ALTER TABLE pulls_next RENAME TO pulls;
CREATE INDEX pulls_account ON pulls (account_id, id DESC);

-- +goose StatementBegin
CREATE TRIGGER pulls_no_update BEFORE UPDATE ON pulls
BEGIN
    SELECT RAISE(ABORT, 'pulls: rows are append-only (UPDATE refused)');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER pulls_no_delete BEFORE DELETE ON pulls
BEGIN
    SELECT RAISE(ABORT, 'pulls: rows are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- +goose Down
CREATE TABLE pulls_prev (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    credential_id TEXT NOT NULL REFERENCES credentials (id) ON DELETE RESTRICT,
    account_id    TEXT NOT NULL CHECK (length(account_id) = 36),
    repository    TEXT NOT NULL,
    tag           TEXT NOT NULL CHECK (tag <> ''),
    digest        TEXT NOT NULL CHECK (digest LIKE 'sha256:%'),
    pulled_at     TIMESTAMP NOT NULL
);
INSERT INTO pulls_prev SELECT id, credential_id, account_id, repository, tag, digest, pulled_at
    FROM pulls WHERE credential_id IS NOT NULL;
DROP TABLE pulls;
ALTER TABLE pulls_prev RENAME TO pulls;
CREATE INDEX pulls_account ON pulls (account_id, id DESC);
-- +goose StatementBegin
CREATE TRIGGER pulls_no_update BEFORE UPDATE ON pulls
BEGIN
    SELECT RAISE(ABORT, 'pulls: rows are append-only (UPDATE refused)');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER pulls_no_delete BEFORE DELETE ON pulls
BEGIN
    SELECT RAISE(ABORT, 'pulls: rows are append-only (DELETE refused)');
END;
-- +goose StatementEnd
