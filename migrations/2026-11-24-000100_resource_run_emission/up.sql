-- yacobot's resources worker (docs/design.md#yacobot-resources): where in the resources segment
-- store a run began emitting its items. The write stage commits its vr_data changes (status = 0,
-- "not yet emitted") together with this position, then appends the items and fsyncs, then sets
-- status = 1. After a crash in between, recovery reads the store from here to tell the items
-- already emitted from those still to emit (docs/formats.md "Resources write protocol").

ALTER TABLE process_timestamp
    ADD COLUMN emit_file BIGINT UNSIGNED NULL COMMENT 'resources segment file where the run began emitting; NULL: nothing to emit yet',
    ADD COLUMN emit_item INT UNSIGNED NULL COMMENT 'item index in that file (from 1) of the first item the run may have emitted';
