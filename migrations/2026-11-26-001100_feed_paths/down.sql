ALTER TABLE vr_resource
    MODIFY COLUMN data_from TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'where the data comes from: 0 partner feed over HTTP (others reserved)',
    MODIFY COLUMN priority INT NOT NULL DEFAULT 0 COMMENT 'higher runs first when several are due';

ALTER TABLE vr_data
    DROP COLUMN hit_field,
    DROP COLUMN location,
    DROP COLUMN loc_id,
    MODIFY COLUMN update_type TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'last change: 1 insert, 2 update, 3 delete';
