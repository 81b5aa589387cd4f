-- +goose Up
-- Foreign keys bind only connections that turn them on (the sqlite3 shell
-- does not), so on SQLite every foreign key's rule is also a trigger and
-- holds for every connection: a child row must name an existing parent,
-- deleting a user or an account cascades to the rows that name it, and a
-- referenced id never changes. Each refusal's message starts as SQLite's
-- own does ("FOREIGN KEY constraint failed"), so it is classified alike.
-- With foreign keys on, the cascades run twice over the same rows; the
-- second finds nothing left.

-- +goose StatementBegin
CREATE TRIGGER users_cascade_delete AFTER DELETE ON users
BEGIN
    DELETE FROM sessions WHERE user_id = OLD.id;
    DELETE FROM memberships WHERE user_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_restrict_update BEFORE UPDATE OF id ON users
WHEN NEW.id IS NOT OLD.id
  AND (EXISTS (SELECT 1 FROM sessions WHERE user_id = OLD.id)
       OR EXISTS (SELECT 1 FROM memberships WHERE user_id = OLD.id))
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a user with sessions or memberships keeps its id');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER accounts_cascade_delete AFTER DELETE ON accounts
BEGIN
    DELETE FROM memberships WHERE account_id = OLD.id;
    DELETE FROM invitations WHERE account_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER accounts_restrict_update BEFORE UPDATE OF id ON accounts
WHEN NEW.id IS NOT OLD.id
  AND (EXISTS (SELECT 1 FROM memberships WHERE account_id = OLD.id)
       OR EXISTS (SELECT 1 FROM invitations WHERE account_id = OLD.id))
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: an account with memberships or invitations keeps its id');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER sessions_parent_insert BEFORE INSERT ON sessions
WHEN NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: sessions.user_id names no user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER sessions_parent_update BEFORE UPDATE OF user_id ON sessions
WHEN NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: sessions.user_id names no user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memberships_parent_insert BEFORE INSERT ON memberships
WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
  OR NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: memberships names no account or no user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memberships_parent_update BEFORE UPDATE OF account_id, user_id ON memberships
WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
  OR NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: memberships names no account or no user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER invitations_parent_insert BEFORE INSERT ON invitations
WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: invitations.account_id names no account');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER invitations_parent_update BEFORE UPDATE OF account_id ON invitations
WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: invitations.account_id names no account');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER invitations_parent_update;
DROP TRIGGER invitations_parent_insert;
DROP TRIGGER memberships_parent_update;
DROP TRIGGER memberships_parent_insert;
DROP TRIGGER sessions_parent_update;
DROP TRIGGER sessions_parent_insert;
DROP TRIGGER accounts_restrict_update;
DROP TRIGGER accounts_cascade_delete;
DROP TRIGGER users_restrict_update;
DROP TRIGGER users_cascade_delete;
