-- A run's items written to vr_data (docs/formats.md "Resources write protocol", step 1), many
-- rows a statement. Bound per row: id (NULL for a new item), res_id, keyword, status_id,
-- data_source_id, md5_sum, doc_id, content, loc_id, location, hit_field, update_type,
-- update_date.
-- A new item is inserted. A changed or revived one names its row's id: the row exists (the
-- run read it under its claim), so ON DUPLICATE KEY UPDATE overwrites it; it is MySQL's
-- multi-row UPDATE. Every row is live (data_status = 1) and not yet emitted (status = 0);
-- create_date is the insert's default and stays.
INSERT INTO vr_data (id, res_id, keyword, status_id, data_source_id, md5_sum, doc_id, content,
                     loc_id, location, hit_field, data_status, status, update_type, update_date)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    status_id = VALUES(status_id),
    data_source_id = VALUES(data_source_id),
    md5_sum = VALUES(md5_sum),
    doc_id = VALUES(doc_id),
    content = VALUES(content),
    loc_id = VALUES(loc_id),
    location = VALUES(location),
    hit_field = VALUES(hit_field),
    data_status = 1,
    status = 0,
    update_type = VALUES(update_type),
    update_date = VALUES(update_date)
