ALTER TABLE url
    DROP COLUMN fetch_error,
    DROP COLUMN last_fetch,
    DROP COLUMN archive_item,
    DROP COLUMN archive_file;
