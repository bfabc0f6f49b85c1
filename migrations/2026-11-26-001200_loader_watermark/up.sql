-- Two masters fed the same reflogs (Loader.Mode = duplicate): how far each master's queue
-- files have been handled, so that a node counts each hit once (docs/formats.md "How a node
-- applies a queue file").
ALTER TABLE queue_applied
    ADD COLUMN skipped TINYINT(1) NOT NULL DEFAULT 0 COMMENT '1: not applied: another master''s files had counted its period (Loader.Mode = duplicate)';

CREATE TABLE loader_watermark (
    master     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the inbox (master name), as queue_applied.source',
    covered    DATETIME    NOT NULL COMMENT 'the latest header time= of the master''s files handled (applied or skipped), UTC: its hits up to then are counted',
    handled_at DATETIME    NOT NULL COMMENT 'when the loader last handled a file of the master (UTC): its progress',
    PRIMARY KEY (master)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='per-master watermarks of the loader in duplicate mode';
