DROP TABLE loader_watermark;
ALTER TABLE queue_applied DROP COLUMN skipped;
