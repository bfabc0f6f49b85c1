-- Each URL's current binding, new or changed (docs/formats.md "Binding tables"). Bound per
-- row: id, md5, item, tragic, phrases, dict_versions, bound_at.
INSERT INTO binding_page (id, md5, item, tragic, phrases, dict_versions, bound_at)
VALUES (?, ?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    md5 = VALUES(md5),
    item = VALUES(item),
    tragic = VALUES(tragic),
    phrases = VALUES(phrases),
    dict_versions = VALUES(dict_versions),
    bound_at = VALUES(bound_at)
