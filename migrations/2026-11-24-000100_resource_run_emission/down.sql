ALTER TABLE process_timestamp
    DROP COLUMN emit_item,
    DROP COLUMN emit_file;
