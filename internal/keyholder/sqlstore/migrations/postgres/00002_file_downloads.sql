-- +goose Up
-- A file downloaded in a browser (licensing.md section 4) is a pull too,
-- made with no registry credential: such a row names the file instead,
-- and every row is exactly one of the two.
ALTER TABLE pulls ALTER COLUMN credential_id DROP NOT NULL;
ALTER TABLE pulls ADD COLUMN file TEXT CHECK (file <> '' AND length(file) <= 255);
ALTER TABLE pulls ADD CONSTRAINT pulls_credential_or_file
    CHECK ((credential_id IS NULL) <> (file IS NULL));

-- +goose Down
DROP TRIGGER pulls_append_only ON pulls;
DELETE FROM pulls WHERE credential_id IS NULL;
ALTER TABLE pulls DROP CONSTRAINT pulls_credential_or_file;
ALTER TABLE pulls DROP COLUMN file;
ALTER TABLE pulls ALTER COLUMN credential_id SET NOT NULL;
CREATE TRIGGER pulls_append_only BEFORE UPDATE OR DELETE ON pulls
    FOR EACH ROW EXECUTE FUNCTION pulls_append_only();
