-- +goose Up
-- The search index holds public projects only (decision 0028): a search
-- then ranks FTS5's own rows and reads the projects of one page, instead
-- of reading every match's row to drop the unlisted ones. The index's
-- content is a view of the public rows, so FTS5's 'rebuild' and
-- 'integrity-check' see what the triggers keep.
DROP TRIGGER projects_fts_update;
DROP TRIGGER projects_fts_delete;
DROP TRIGGER projects_fts_insert;
DROP TABLE projects_fts;

CREATE VIEW public_projects AS
    SELECT seq, name, summary, description FROM projects WHERE visibility = 'public';

CREATE VIRTUAL TABLE projects_fts USING fts5(
    name, summary, description,
    content = 'public_projects', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO projects_fts (projects_fts) VALUES ('rebuild');

-- +goose StatementBegin
CREATE TRIGGER projects_fts_insert AFTER INSERT ON projects WHEN NEW.visibility = 'public' BEGIN
    INSERT INTO projects_fts (rowid, name, summary, description) VALUES (NEW.seq, NEW.name, NEW.summary, NEW.description);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_fts_delete AFTER DELETE ON projects WHEN OLD.visibility = 'public' BEGIN
    INSERT INTO projects_fts (projects_fts, rowid, name, summary, description) VALUES ('delete', OLD.seq, OLD.name, OLD.summary, OLD.description);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_fts_update AFTER UPDATE OF name, summary, description, visibility ON projects BEGIN
    INSERT INTO projects_fts (projects_fts, rowid, name, summary, description)
        SELECT 'delete', OLD.seq, OLD.name, OLD.summary, OLD.description WHERE OLD.visibility = 'public';
    INSERT INTO projects_fts (rowid, name, summary, description)
        SELECT NEW.seq, NEW.name, NEW.summary, NEW.description WHERE NEW.visibility = 'public';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER projects_fts_update;
DROP TRIGGER projects_fts_delete;
DROP TRIGGER projects_fts_insert;
DROP TABLE projects_fts;
DROP VIEW public_projects;

CREATE VIRTUAL TABLE projects_fts USING fts5(
    name, summary, description,
    content = 'projects', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO projects_fts (projects_fts) VALUES ('rebuild');

-- +goose StatementBegin
CREATE TRIGGER projects_fts_insert AFTER INSERT ON projects BEGIN
    INSERT INTO projects_fts (rowid, name, summary, description) VALUES (NEW.seq, NEW.name, NEW.summary, NEW.description);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_fts_delete AFTER DELETE ON projects BEGIN
    INSERT INTO projects_fts (projects_fts, rowid, name, summary, description) VALUES ('delete', OLD.seq, OLD.name, OLD.summary, OLD.description);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_fts_update AFTER UPDATE OF name, summary, description ON projects BEGIN
    INSERT INTO projects_fts (projects_fts, rowid, name, summary, description) VALUES ('delete', OLD.seq, OLD.name, OLD.summary, OLD.description);
    INSERT INTO projects_fts (rowid, name, summary, description) VALUES (NEW.seq, NEW.name, NEW.summary, NEW.description);
END;
-- +goose StatementEnd
