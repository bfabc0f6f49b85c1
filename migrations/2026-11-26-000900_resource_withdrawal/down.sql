ALTER TABLE vr_resource
    MODIFY COLUMN res_status TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 enabled, 0 disabled';
