-- The feeds' remaining paths from the source's MysqlHandlerTask (docs/formats.md "Update
-- types", "Locations", "Multi-hit classes", "Customer resources"): an item's location and its
-- id in the location list, the full-hit fields of a multi-hit class's items, the update types
-- that change no item (0), a large resource's priority and the customer resources (data_from 4).
ALTER TABLE vr_data
    ADD COLUMN loc_id INT UNSIGNED NULL COMMENT 'id of the item''s location in Resources.LocationFile (the source''s locationlist); NULL: no location, or one the list does not know' AFTER content,
    ADD COLUMN location VARCHAR(255) NOT NULL DEFAULT '' COMMENT 'the item''s location as its feed gives it (the first value of the Resources.LocationLabel field)' AFTER loc_id,
    ADD COLUMN hit_field TEXT NULL COMMENT 'multi-hit classes (class_id >= 70000000): the values of the item''s is_fullhit fields, in rule order, tab-separated; NULL for other classes' AFTER location,
    MODIFY COLUMN update_type TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'last change: 1 insert (INSERT), 2 update (UPDATE1), 3 delete; 0 the item unchanged, its loc_id dropped (UPDATE2) or changed (UPDATE3)';

ALTER TABLE vr_resource
    MODIFY COLUMN data_from TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'where the data comes from: 0 partner feed over HTTP; 4 a customer resource (its customer_resource rows in Resources.CustomerDatabase are read and written at each run); others reserved',
    MODIFY COLUMN priority INT NOT NULL DEFAULT 0 COMMENT 'higher runs first when several are due; raised to 2 by a run that finds the resource large (Resources.LargeItems live items)';
