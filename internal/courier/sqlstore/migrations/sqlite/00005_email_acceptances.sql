-- +goose Up
-- email_acceptances is where an accepted send request is written on
-- SQLite: one INSERT into it writes the message, its first history entry
-- and its outbox event (the trigger below), so acceptance is a single
-- statement that sqldb's group commit shares a transaction and a commit
-- with the others arriving together. PostgreSQL does the same with a
-- data-modifying WITH, which SQLite lacks. Nothing is ever read from it.
CREATE VIEW email_acceptances (id, template, recipient, locale, requested_by, status, data_sealed, at, detail,
    event_id, event_type, event_subject, event_data, traceparent) AS
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;

-- +goose StatementBegin
CREATE TRIGGER email_acceptances_insert INSTEAD OF INSERT ON email_acceptances
BEGIN
    INSERT INTO emails (id, template, recipient, locale, requested_by, status, data_sealed,
        next_attempt_at, created_at, updated_at)
    VALUES (NEW.id, NEW.template, NEW.recipient, NEW.locale, NEW.requested_by, NEW.status, NEW.data_sealed,
        NEW.at, NEW.at, NEW.at);
    INSERT INTO email_history (email_id, status, detail, attempt_id, at)
    VALUES (NEW.id, NEW.status, NEW.detail, NULL, NEW.at);
    INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent)
    VALUES (NEW.event_id, NEW.event_type, 'courier', NEW.event_subject, NEW.at, NEW.event_data, NEW.at, NEW.at,
        NEW.traceparent);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER email_acceptances_insert;
DROP VIEW email_acceptances;
